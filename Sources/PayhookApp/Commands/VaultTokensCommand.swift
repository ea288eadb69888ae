import Foundation
import PayhookCore
import PayhookAdmin
import PayhookSubscriptions

/// `payhook vault-tokens register`: stores a token a merchant saved with the provider outside
/// any payment (no webhook announces it), after the provider confirms it. Runs
/// `VaultTokenRegistrar`, the code behind `POST /v1/vault-tokens`, audited with the actor.
struct VaultTokensCommand: CommandGroup {
    static let usage = """
        usage: payhook vault-tokens register --provider P --customer ID (--card-id ID | --payment-profile-id ID)
                                             [--shopper-reference REF] [--account NAME] [--actor NAME] [--json]

          register                  confirm a saved card or payment profile with the provider's
                                    API, then store it as a vault token (ids and the provider's
                                    display data only). Mercado Pago: a payment profile can carry a
                                    subscription, a bare card id cannot. Adyen: --card-id is the
                                    storedPaymentMethodId, --shopper-reference is required (no
                                    --customer). PXP tokens cannot be confirmed and are stored
                                    from its webhooks only. Registering the same token again
                                    changes nothing.

        Needs the provider's API credentials (PAYHOOK_MERCADOPAGO_ACCESS_TOKEN, or
        PAYHOOK_ADYEN_API_KEY and PAYHOOK_ADYEN_MERCHANT_ACCOUNT). Written to
        audit_log with the actor (--actor, else $USER, else the operating-system account).

        """

    static let missingSubcommand = "vault-tokens needs a subcommand"

    /// Which command-line option feeds each body field, so a validation error names the option.
    static let optionForField: [String: String] = [
        "provider": "--provider", "customer_id": "--customer", "token": "--card-id/--payment-profile-id",
        "token_kind": "--card-id/--payment-profile-id", "shopper_reference": "--shopper-reference", "account": "--account",
        "actor": "--actor",
    ]

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        guard subcommand == "register" else { return usageError("unknown vault-tokens subcommand: \(subcommand)") }
        let options: Set<String> = ["--provider", "--customer", "--card-id", "--payment-profile-id", "--shopper-reference",
                                    "--account", "--actor"]
        guard let parsed = parse(rest, options: options, flags: ["--json"]) else { return 2 }
        guard parsed.positionals.isEmpty else { return usageError("register takes options only, e.g. --provider mercadopago") }
        let values = parsed.values
        guard let provider = values["--provider"] else { return usageError("register needs --provider") }
        // The flags become the admin API's body, so both validate with the same rules.
        var body: [(key: String, value: JSONValue)] = [("provider", .string(provider))]
        switch (values["--card-id"], values["--payment-profile-id"]) {
        case (let card?, nil):
            body.append(("token", .string(card)))
            if provider == "mercadopago" { body.append(("token_kind", .string("card_id"))) }
        case (nil, let profile?):
            body += [("token", .string(profile)), ("token_kind", .string("payment_profile"))]
        default:
            return usageError("give --card-id or --payment-profile-id (one of them)")
        }
        for (option, field) in [("--customer", "customer_id"), ("--shopper-reference", "shopper_reference"), ("--account", "account")] {
            if let value = values[option] { body.append((field, .string(value))) }
        }
        let registration: VaultTokenRegistration
        do {
            registration = try VaultTokenRegistration.parse(JSONObject(body))
        } catch {
            let option = error.field.flatMap { Self.optionForField[$0] }
            return usageError((option.map { "\($0): " } ?? "") + error.message)
        }
        guard let actor = actor(parsed) else { return 2 }
        let action = operatorAction(actor: actor, arguments: ["register"] + rest)
        let configuration: Configuration
        switch PayhookCLI.loadConfiguration(environment) {
        case .failure(let error): return fail(error.description)
        case .success(let loaded): configuration = loaded.0
        }
        let clients = PayhookServer.providerClients(configuration: configuration, logger: .silent)
        return await withDatabase(report: { report($0, optionForField: Self.optionForField) }) { pool in
            let outcome = try await VaultTokenRegistrar(pool: pool, clients: clients).register(registration, by: action)
            if parsed.flags.contains("--json") {
                output.print(outcome.json.rendered)
            } else {
                let token = outcome.token
                let state = outcome.created ? "registered" : (outcome.changed ? "completed" : "already registered; nothing changed for")
                output.print("\(state) vault token \(token.id) (\(token.provider) \(token.kind ?? "token") \(token.token), \(token.status))")
            }
            return 0
        }
    }
}
