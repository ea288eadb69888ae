import Foundation
import PayhookCore
import PayhookPostgres
import PayhookAdmin
import PayhookOperations

/// `payhook inbound reprocess`: re-run normalization over processed deliveries after a mapping
/// fix. A dry run (a count) unless `--execute`.
enum InboundCommand: Subcommand {
    static let usage = """
        usage: payhook inbound reprocess --provider mercadopago|adyen|pxp --since 2h|7d|ISO-TIME
                                         [--execute] [--note TEXT] [--actor NAME] [--json]

          DRY RUN unless --execute: counts the processed deliveries that would be re-run. With
          --execute they go back to pending and the processors normalize them again; processing
          is idempotent, so effects already applied do not happen twice. Written to audit_log.

        """

    static let providers: Set<String> = ["mercadopago", "adyen", "pxp"]

    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) async -> Int32 {
        var rest = arguments
        guard let subcommand = rest.popFirst() else { return usageError("inbound needs a subcommand: reprocess") }
        switch subcommand {
        case "reprocess": break
        case "help", "--help", "-h":
            print(usage, terminator: "")
            return 0
        default: return usageError("unknown inbound subcommand: \(subcommand)")
        }
        let parsed: CommandArguments
        switch CommandArguments.parse(rest, options: ["--provider", "--since", "--note", "--actor"], flags: ["--execute", "--json"]) {
        case .success(let value): parsed = value
        case .failure(let problem): return usageError(problem.message)
        }
        guard parsed.positionals.isEmpty else { return usageError("unexpected argument: \(parsed.positionals[0])") }
        guard let provider = parsed.values["--provider"], providers.contains(provider) else {
            return usageError("--provider is required: mercadopago, adyen or pxp")
        }
        guard let sinceText = parsed.values["--since"] else { return usageError("--since is required") }
        guard let since = SinceArgument.parse(sinceText) else { return usageError("--since: \(SinceArgument.help)") }
        let execute = parsed.flags.contains("--execute")
        let json = parsed.flags.contains("--json")
        var actor = ""
        if execute {
            guard let name = parsed.actor(environment) else { return usageError(CommandArguments.missingActor) }
            actor = name
        }
        let databaseURL: String
        switch PayhookCLI.loadConfiguration(environment) {
        case .success(let loaded): databaseURL = loaded.1
        case .failure(let error): return PayhookCLI.fail(error.description)
        }
        let pool = PostgresPool(conninfo: databaseURL, maxConnections: 2)
        let reprocessing = InboundReprocessing(pool: pool)
        do {
            if !execute {
                let selection = try await reprocessing.count(provider: provider, since: since)
                if json {
                    print(JSONOutput.object([
                        .init("dry_run", .bool(true)), .init("provider", .string(provider)), .init("since", .timestamp(since)),
                        .init("would_reprocess", .int(selection.count)),
                    ]).rendered)
                } else {
                    print("DRY RUN: would reprocess \(selection.count) processed \(provider) deliveries received since "
                          + "\(JSONOutput.format(since)); nothing was changed.")
                    if selection.count > 0 { print("Run again with --execute to set them back to pending.") }
                }
                await pool.close()
                return 0
            }
            let action = OperatorAction(actor: actor, note: parsed.values["--note"], context: [
                .init("via", .string("cli")), .init("arguments", .array(Array(arguments).map { .string($0) })),
            ])
            let count = try await reprocessing.execute(provider: provider, since: since, by: action)
            if json {
                print(JSONOutput.object([
                    .init("dry_run", .bool(false)), .init("provider", .string(provider)), .init("since", .timestamp(since)),
                    .init("reprocessing", .int(count)),
                ]).rendered)
            } else {
                print("set \(count) \(provider) deliveries back to pending; processors will normalize them again")
            }
            await pool.close()
            return 0
        } catch {
            await pool.close()
            return PayhookCLI.fail(OperationsError.wrapping(error).message)
        }
    }
}
