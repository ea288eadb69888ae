import Foundation
import PayhookCore
import PayhookPostgres
import PayhookAdmin
import PayhookOperations

/// `payhook inbound reprocess`: re-run normalization over processed deliveries after a mapping
/// fix. A dry run (a count) unless `--execute`.
struct InboundCommand: CommandGroup {
    static let usage = """
        usage: payhook inbound reprocess --provider mercadopago|adyen|pxp --since 2h|7d|ISO-TIME
                                         [--execute] [--note TEXT] [--actor NAME] [--json]

          DRY RUN unless --execute: counts the processed deliveries that would be re-run. With
          --execute they go back to pending and the processors normalize them again; processing
          is idempotent, so effects already applied do not happen twice. Written to audit_log.

        """

    static let providers: Set<String> = ["mercadopago", "adyen", "pxp"]

    static let missingSubcommand = "inbound needs a subcommand: reprocess"

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        guard subcommand == "reprocess" else { return usageError("unknown inbound subcommand: \(subcommand)") }
        guard let parsed = parse(rest, options: ["--provider", "--since", "--note", "--actor"], flags: ["--execute", "--json"]) else {
            return 2
        }
        guard parsed.positionals.isEmpty else { return usageError("unexpected argument: \(parsed.positionals[0])") }
        guard let provider = parsed.values["--provider"], Self.providers.contains(provider) else {
            return usageError("--provider is required: mercadopago, adyen or pxp")
        }
        guard let sinceText = parsed.values["--since"] else { return usageError("--since is required") }
        guard let since = SinceArgument.parse(sinceText) else { return usageError("--since: \(SinceArgument.help)") }
        guard let actor = actorIfExecuting(parsed) else { return 2 }
        let execute = parsed.flags.contains("--execute")
        let json = parsed.flags.contains("--json")
        return await withDatabase { pool in
            let reprocessing = InboundReprocessing(pool: pool)
            if !execute {
                let selection = try await reprocessing.count(provider: provider, since: since)
                if json {
                    output.print(JSONOutput.object([
                        .init("dry_run", .bool(true)), .init("provider", .string(provider)), .init("since", .timestamp(since)),
                        .init("would_reprocess", .int(selection.count)),
                    ]).rendered)
                } else {
                    output.print("DRY RUN: would reprocess \(selection.count) processed \(provider) deliveries received since "
                                 + "\(JSONOutput.format(since)); nothing was changed.")
                    if selection.count > 0 { output.print("Run again with --execute to set them back to pending.") }
                }
                return 0
            }
            let count = try await reprocessing.execute(
                provider: provider, since: since, by: operatorAction(actor: actor, note: parsed.values["--note"], arguments: [subcommand] + rest))
            if json {
                output.print(JSONOutput.object([
                    .init("dry_run", .bool(false)), .init("provider", .string(provider)), .init("since", .timestamp(since)),
                    .init("reprocessing", .int(count)),
                ]).rendered)
            } else {
                output.print("set \(count) \(provider) deliveries back to pending; processors will normalize them again")
            }
            return 0
        }
    }
}
