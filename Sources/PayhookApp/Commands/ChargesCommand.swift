import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookAdmin
import PayhookSubscriptions

/// `payhook charges resolve`: the operator settles a charge whose outcome payhook cannot learn,
/// through `ChargeOperations`, audited with the actor.
enum ChargesCommand: Subcommand {
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

    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) async -> Int32 {
        var rest = arguments
        guard let subcommand = rest.popFirst() else { return usageError("charges needs a subcommand") }
        switch subcommand {
        case "resolve":
            guard let parsed = parse(rest, options: ["--as", "--note", "--provider-payment-id", "--actor"],
                                                        flags: ["--json"]) else { return 2 }
            guard parsed.positionals.count == 1, let id = Int64(parsed.positionals[0]), id > 0 else {
                return usageError("resolve needs exactly one charge id")
            }
            guard let text = parsed.values["--as"], let resolution = ChargeOperations.Resolution(rawValue: text) else {
                return usageError("resolve needs --as succeeded or --as failed")
            }
            guard let note = parsed.values["--note"] else { return usageError("resolve needs --note saying what the provider's records show") }
            guard let actor = parsed.actor(environment) else { return usageError(CommandArguments.missingActor) }
            let action = OperatorAction(actor: actor, note: note, context: [
                .init("via", .string("cli")), .init("arguments", .array(Array(arguments).map { .string($0) })),
            ])
            switch PayhookCLI.loadConfiguration(environment) {
            case .failure(let error): return PayhookCLI.fail(error.description)
            case .success(let (configuration, _)):
                return await PayhookCLI.withDatabase(environment) { pool in
                    let operations = ChargeOperations(pool: pool, queue: JobQueue(pool: pool), settings: configuration.subscriptions)
                    do {
                        let outcome = try await operations.resolve(
                            id: id, as: resolution, providerPaymentID: parsed.values["--provider-payment-id"], by: action)
                        print(parsed.flags.contains("--json") ? outcome.json.rendered : outcome.effect)
                        return 0
                    } catch {
                        return OperationsError.wrapping(error).reportOnCommandLine(optionForField: [
                            "note": "--note", "provider_payment_id": "--provider-payment-id", "id": "ID",
                        ])
                    }
                }
            }
        case "help", "--help", "-h":
            print(usage, terminator: "")
            return 0
        default:
            return usageError("unknown charges subcommand: \(subcommand)")
        }
    }
}
