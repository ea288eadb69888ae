import Foundation
import PayhookCore
import PayhookPostgres
import PayhookOperations

/// `payhook retention sweep`: one retention sweep now, with the `serve` process's settings
/// (`PAYHOOK_RETENTION_DAYS` and the rest), then exit.
///
/// Why a command when `serve` already sweeps every `PAYHOOK_RETENTION_INTERVAL_SECONDS`: after a
/// shorter retention is configured, or from a scheduler an operator controls; and it lets a
/// benchmark or test time one sweep. It may run beside any number of `serve` processes.
struct RetentionCommand: CommandGroup {
    static let usage = """
        usage: payhook retention sweep [--json]

          Deletes what retention allows (processed deliveries, payment events, rejected
          deliveries, finished jobs past their PAYHOOK_*_RETENTION_DAYS), in batches, and prints
          how many rows of each table went. Safe beside running payhook processes.

        """

    static let missingSubcommand = "retention needs a subcommand: sweep"

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        guard subcommand == "sweep" else { return usageError("unknown retention subcommand: \(subcommand)") }
        guard let arguments = parse(rest, options: [], flags: ["--json"]) else { return 2 }
        guard arguments.positionals.isEmpty else { return usageError("retention sweep takes no arguments") }
        let policy: RetentionPolicy
        switch PayhookCLI.loadConfiguration(environment) {
        case .success(let loaded): policy = loaded.0.retention
        case .failure(let error): return fail(error.description)
        }
        return await withDatabase { pool in
            let sweeper = RetentionSweeper(pool: pool, policy: policy, metrics: MetricsRegistry(), logger: .silent)
            let started = ContinuousClock.now
            do {
                let outcome = try await sweeper.sweep()
                let elapsed = ContinuousClock.now - started
                let seconds = String(format: "%.2f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                if arguments.flags.contains("--json") {
                    output.print(JSONOutput.object([
                        .init("inbound_events", .int(Int64(outcome.inboundEvents))),
                        .init("payment_events", .int(Int64(outcome.paymentEvents))),
                        .init("rejected_deliveries", .int(Int64(outcome.rejectedDeliveries))),
                        .init("jobs", .int(Int64(outcome.jobs))), .init("seconds", .number(seconds)),
                    ]).rendered)
                } else {
                    output.print("deleted \(outcome.inboundEvents) inbound_events, \(outcome.paymentEvents) payment_events, "
                          + "\(outcome.rejectedDeliveries) rejected_deliveries, \(outcome.jobs) jobs in \(seconds) s")
                }
                return 0
            } catch {
                return fail("retention sweep failed: \(error)")
            }
        }
    }
}
