import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookOperations
import PayhookAdmin
import PayhookSubscriptions

/// `payhook charges resolve`: the operator settles a charge whose outcome payhook cannot learn,
/// through `ChargeOperations`, audited with the actor.
struct ChargesCommand: CommandGroup {
    static let usage = """
        usage: payhook charges resolve ID --as succeeded|failed --note TEXT
                                      [--provider-payment-id P] [--actor NAME] [--json]

          resolve ID                settle a charge whose outcome is unknown (dead letter
                                    charge_outcome_unknown) from the provider's own records:
                                    --as succeeded needs --provider-payment-id; --as failed
                                    continues the cycle as after a soft decline (next dunning
                                    attempt under a new key, or past_due). Find the charge id
                                    with `payhook subscriptions show`.

        Written to audit_log with the actor (--actor, else $USER, else the
        operating-system account).

        """

    static let missingSubcommand = "charges needs a subcommand"

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        guard subcommand == "resolve" else { return usageError("unknown charges subcommand: \(subcommand)") }
        guard let parsed = parse(rest, options: ["--as", "--note", "--provider-payment-id", "--actor"], flags: ["--json"]) else {
            return 2
        }
        guard let id = onlyID(parsed, else: "resolve needs exactly one charge id") else { return 2 }
        guard let text = parsed.values["--as"], let resolution = ChargeOperations.Resolution(rawValue: text) else {
            return usageError("resolve needs --as succeeded or --as failed")
        }
        guard let note = parsed.values["--note"] else { return usageError("resolve needs --note saying what the provider's records show") }
        guard let actor = actor(parsed) else { return 2 }
        let action = operatorAction(actor: actor, note: note, arguments: [subcommand] + rest)
        let configuration: Configuration
        switch PayhookCLI.loadConfiguration(environment) {
        case .failure(let error): return fail(error.description)
        case .success(let loaded): configuration = loaded.0
        }
        let optionForField = ["note": "--note", "provider_payment_id": "--provider-payment-id", "id": "ID"]
        return await withDatabase(report: { report($0, optionForField: optionForField) }) { pool in
            let operations = ChargeOperations(pool: pool, queue: JobQueue(pool: pool), settings: configuration.subscriptions)
            let outcome = try await operations.resolve(
                id: id, as: resolution, providerPaymentID: parsed.values["--provider-payment-id"], by: action)
            output.print(parsed.flags.contains("--json") ? outcome.json.rendered : outcome.effect)
            return 0
        }
    }
}
