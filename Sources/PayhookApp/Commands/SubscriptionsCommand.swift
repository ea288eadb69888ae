import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookAdmin
import PayhookSubscriptions

/// `payhook subscriptions create | list | show | cancel | pause | resume`: the operator's view of
/// recurring charges. Every change goes through `SubscriptionOperations`, the same code the
/// admin API runs, and is written to `audit_log` with the actor.
struct SubscriptionsCommand: CommandGroup {
    static let usage = """
        usage: payhook subscriptions <create|list|show|cancel|pause|resume> [options]

          create --reference REF --amount MINOR_UNITS --currency CUR --every N --unit day|week|month
                 (--token-provider P --token TOKEN | --vault-token-id ID)
                 [--start-at ISO-TIME] [--end-at ISO-TIME] [--max-cycles N] [--actor NAME] [--json]
                                    a subscription on a stored vault token; the first cycle is due
                                    at --start-at (default now); amounts are minor units (1999 = 19.99)
          list [--status S] [--provider P] [--limit N] [--json]
                                    subscriptions, newest first (default at most 100)
          show ID [--json]          one subscription and every charge attempt made for it
          cancel ID [--note TEXT] [--actor NAME] [--json]
                                    stop charging for good (attempts not yet sent are skipped)
          pause ID | resume ID [--note TEXT] [--actor NAME] [--json]
                                    stop charging until resumed; resuming charges from the next
                                    cycle due at or after now

        Changes are written to audit_log with the actor (--actor, else $USER, else the
        operating-system account).

        """

    /// Which command-line option feeds each body field, so a validation error names the option.
    static let optionForField: [String: String] = [
        "vault_token": "--token-provider/--token", "vault_token.provider": "--token-provider",
        "vault_token.token": "--token", "vault_token_id": "--vault-token-id", "amount.value": "--amount",
        "amount.currency": "--currency", "interval.every": "--every", "interval.unit": "--unit",
        "start_at": "--start-at", "end_at": "--end-at", "reference": "--reference", "max_cycles": "--max-cycles",
        "actor": "--actor",
    ]

    static let missingSubcommand = "subscriptions needs a subcommand"

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        switch subcommand {
        case "create":
            return await create(rest)
        case "list":
            guard let parsed = parse(rest, options: ["--status", "--provider", "--limit"], flags: ["--json"]) else { return 2 }
            guard parsed.positionals.isEmpty else { return usageError("list takes no ids (use show ID)") }
            var status: Subscription.Status?
            if let text = parsed.values["--status"] {
                guard let value = Subscription.Status(rawValue: text) else {
                    return usageError("--status must be one of \(Subscription.Status.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                status = value
            }
            var limit = 100
            if let text = parsed.values["--limit"] {
                guard let value = Int(text), (1...10_000).contains(value) else { return usageError("--limit must be a number from 1 to 10000") }
                limit = value
            }
            return await withOperations { operations in
                let subscriptions = try await operations.list(status: status, provider: parsed.values["--provider"], limit: limit)
                printResult(parsed, json: .array(subscriptions.map(\.json)), text: Self.table(subscriptions))
                return 0
            }
        case "show":
            guard let parsed = parse(rest, options: [], flags: ["--json"]) else { return 2 }
            guard let id = onlyID(parsed, else: "show needs exactly one subscription id") else { return 2 }
            return await withOperations { operations in
                let detail = try await operations.detail(id: id)
                printResult(parsed, json: detail.json, text: Self.describe(detail))
                return 0
            }
        case "cancel", "pause", "resume":
            guard let parsed = parse(rest, options: ["--note", "--actor"], flags: ["--json"]) else { return 2 }
            guard let id = onlyID(parsed, else: "\(subcommand) needs exactly one subscription id") else { return 2 }
            guard let actor = actor(parsed) else { return 2 }
            let action = operatorAction(actor: actor, note: parsed.values["--note"], arguments: [subcommand] + rest)
            return await withOperations { operations in
                let outcome = switch subcommand {
                case "cancel": try await operations.cancel(id: id, by: action)
                case "pause": try await operations.pause(id: id, by: action)
                default: try await operations.resume(id: id, by: action)
                }
                if parsed.flags.contains("--json") {
                    output.print(outcome.json.rendered)
                } else if outcome.changed {
                    output.print("subscription \(id) is \(outcome.subscription.status.rawValue)")
                } else {
                    output.print("subscription \(id) was already \(outcome.subscription.status.rawValue); nothing changed")
                }
                return 0
            }
        default:
            return usageError("unknown subscriptions subcommand: \(subcommand)")
        }
    }

    private func create(_ arguments: ArraySlice<String>) async -> Int32 {
        let options: Set<String> = ["--reference", "--amount", "--currency", "--every", "--unit", "--token-provider", "--token",
                                    "--vault-token-id", "--start-at", "--end-at", "--max-cycles", "--actor"]
        guard let parsed = parse(arguments, options: options, flags: ["--json"]) else { return 2 }
        guard parsed.positionals.isEmpty else { return usageError("create takes options only, e.g. --reference sub-42") }
        let values = parsed.values
        for required in ["--reference", "--amount", "--currency", "--every", "--unit"] where values[required] == nil {
            return usageError("create needs \(required)")
        }
        // The flags become the admin API's body, so both validate with the same rules.
        var body: [(key: String, value: JSONValue)] = [
            ("reference", .string(values["--reference"] ?? "")),
            ("amount", .object(JSONObject([("value", Self.integerOrText(values["--amount"])),
                                           ("currency", .string(values["--currency"] ?? ""))]))),
            ("interval", .object(JSONObject([("every", Self.integerOrText(values["--every"])),
                                             ("unit", .string(values["--unit"] ?? ""))]))),
        ]
        switch (values["--vault-token-id"], values["--token-provider"], values["--token"]) {
        case (let id?, nil, nil): body.append(("vault_token_id", Self.integerOrText(id)))
        case (nil, let provider?, let token?):
            body.append(("vault_token", .object(JSONObject([("provider", .string(provider)), ("token", .string(token))]))))
        default: return usageError("give --token-provider and --token, or --vault-token-id")
        }
        if let start = values["--start-at"] { body.append(("start_at", .string(start))) }
        if let end = values["--end-at"] { body.append(("end_at", .string(end))) }
        if let cycles = values["--max-cycles"] { body.append(("max_cycles", Self.integerOrText(cycles))) }
        let draft: NewSubscription
        do {
            draft = try NewSubscription.parse(JSONObject(body), now: Date())
        } catch {
            let option = error.field.flatMap { Self.optionForField[$0] }
            return usageError((option.map { "\($0): " } ?? "") + error.message)
        }
        guard let actor = actor(parsed) else { return 2 }
        let action = operatorAction(actor: actor, arguments: Array(arguments))
        return await withOperations { operations in
            let subscription = try await operations.create(draft, by: action)
            if parsed.flags.contains("--json") {
                output.print(subscription.json.rendered)
            } else {
                output.print("created subscription \(subscription.id) (\(subscription.reference)): first charge due \(JSONOutput.format(subscription.nextChargeAt))")
            }
            return 0
        }
    }

    /// An option's value as the JSON the admin API would get: an integer as a number, anything
    /// else as a string (which the validation then refuses by the option's name).
    private static func integerOrText(_ text: String?) -> JSONValue {
        guard let text else { return .null }
        return Int64(text).map { .number(String($0)) } ?? .string(text)
    }

    // MARK: output

    static func table(_ subscriptions: [Subscription]) -> String {
        let header = ["ID", "REFERENCE", "STATUS", "PROVIDER", "AMOUNT", "INTERVAL", "NEXT_CYCLE", "NEXT_CHARGE"]
        let rows = subscriptions.map { subscription in
            [String(subscription.id), subscription.reference, subscription.status.rawValue, subscription.vaultToken.provider,
             "\(subscription.amountMinor) \(subscription.currency)", intervalText(subscription), String(subscription.cycle),
             JSONOutput.format(subscription.nextChargeAt)]
        }
        return TextTable.listing(header: header, rows: rows, counting: "subscription", none: "no subscriptions match")
    }

    static func describe(_ detail: SubscriptionOperations.Detail) -> String {
        let subscription = detail.subscription
        var out = "subscription \(subscription.id) \(subscription.reference) (\(subscription.status.rawValue))\n"
        if let reason = subscription.statusReason { out += "  reason      \(reason)\n" }
        out += "  token       \(subscription.vaultToken.provider) vault token \(subscription.vaultToken.id) (\(subscription.vaultToken.status))\n"
        out += "  amount      \(subscription.amountMinor) \(subscription.currency) (minor units)\n"
        out += "  interval    \(intervalText(subscription)) from \(JSONOutput.format(subscription.startAt))\n"
        out += "  next        cycle \(subscription.cycle) at \(JSONOutput.format(subscription.nextChargeAt))\n"
        if let max = subscription.maxCycles { out += "  max cycles  \(max)\n" }
        if let end = subscription.endAt { out += "  ends        \(JSONOutput.format(end))\n" }
        out += "charges (\(detail.charges.count))\n"
        for charge in detail.charges {
            out += "  charge \(charge.id)  cycle \(charge.cycle) attempt \(charge.attempt)  \(charge.status)  key \(charge.idempotencyKey)"
            if let payment = charge.providerPaymentID { out += "  payment \(payment)" }
            if let code = charge.declineCode { out += "  decline \(code)" }
            out += "  due \(JSONOutput.format(charge.scheduledAt))\n"
        }
        return out
    }

    private static func intervalText(_ subscription: Subscription) -> String {
        guard let interval = subscription.interval else { return subscription.intervalJSON }
        return "every \(interval.every) \(interval.unit.rawValue)\(interval.every == 1 ? "" : "s")"
    }

    // MARK: plumbing

    /// Runs `body` with the operations on a small pool from the environment. A refused
    /// operation prints its message and exits 1 (2 when the input was invalid).
    private func withOperations(_ body: (SubscriptionOperations) async throws -> Int32) async -> Int32 {
        await withDatabase(report: { report($0, optionForField: Self.optionForField) }) { pool in
            try await body(SubscriptionOperations(pool: pool))
        }
    }
}
