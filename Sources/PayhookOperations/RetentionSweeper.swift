import Foundation
import PayhookCore
import PayhookPostgres
import Synchronization

/// Deletes processed deliveries, rejected-delivery forensics and finished jobs once they are
/// older than the retention policy allows, in small batches.
///
/// Only processed `inbound_events` that nothing references are deleted: `payment_events` and
/// `payment_adjustments` rows point at the delivery they came from (foreign keys, so those rows
/// are kept with their delivery), and a delivery with a dead letter stays for
/// `dead-letters show`. Any number of processes may sweep at once: a row two sweepers pick is
/// deleted by one and skipped by the other.
package final class RetentionSweeper: Sendable {
    let pool: PostgresPool
    let policy: RetentionPolicy
    private let logger: Logger
    private let deletedInbound: MetricsRegistry.Counter
    private let deletedRejected: MetricsRegistry.Counter
    private let deletedJobs: MetricsRegistry.Counter
    private let now: @Sendable () -> Date
    private let loop = PeriodicLoop()

    /// What one sweep deleted.
    package struct Outcome: Sendable, Equatable {
        var inboundEvents = 0
        var rejectedDeliveries = 0
        var jobs = 0
    }

    init(pool: PostgresPool, policy: RetentionPolicy, metrics: MetricsRegistry, logger: Logger,
         now: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.policy = policy
        self.logger = logger
        self.now = now
        metrics.describe("payhook_retention_deleted_total", type: "counter", help: "Rows deleted by retention, by table.")
        deletedInbound = metrics.counter("payhook_retention_deleted_total", [("table", "inbound_events")])
        deletedRejected = metrics.counter("payhook_retention_deleted_total", [("table", "rejected_deliveries")])
        deletedJobs = metrics.counter("payhook_retention_deleted_total", [("table", "jobs")])
    }

    /// Deletes every row past retention, batch by batch, until a batch comes back short.
    func sweep() async throws -> Outcome {
        var outcome = Outcome()
        let day: TimeInterval = 86400
        if policy.processedInboundDays > 0 {
            let cutoff = now().addingTimeInterval(-Double(policy.processedInboundDays) * day)
            outcome.inboundEvents = try await deleteInBatches(OperationsSQL.shared.deleteProcessedInbound, cutoff, deletedInbound)
        }
        if policy.rejectedDays > 0 {
            let cutoff = now().addingTimeInterval(-Double(policy.rejectedDays) * day)
            outcome.rejectedDeliveries = try await deleteInBatches(OperationsSQL.shared.deleteRejectedDeliveries, cutoff, deletedRejected)
        }
        if policy.finishedJobDays > 0 {
            let cutoff = now().addingTimeInterval(-Double(policy.finishedJobDays) * day)
            outcome.jobs = try await deleteInBatches(OperationsSQL.shared.deleteFinishedJobs, cutoff, deletedJobs)
        }
        return outcome
    }

    private func deleteInBatches(_ sql: String, _ cutoff: Date, _ counter: MetricsRegistry.Counter) async throws -> Int {
        var total = 0
        while true {
            let deleted = try await pool.query(sql, [.timestamptz(cutoff), .int(Int64(policy.batchSize))]).affectedRows
            total += deleted
            counter.increment(by: UInt64(deleted))
            if deleted < policy.batchSize || loopStopped { return total }
        }
    }

    /// Set by `stop()` so that a long sweep ends between batches, not after the last one.
    private let stopped = Mutex(false)
    private var loopStopped: Bool { stopped.withLock { $0 } }

    /// Sweeps every `policy.interval` until `stop()`. A failed sweep (database down) is logged
    /// and tried again next interval; retention is never urgent.
    func run() async {
        await loop.run(every: policy.interval) {
            do {
                let outcome = try await sweep()
                if outcome != Outcome() {
                    logger.info("retention sweep", [
                        "deleted.inbound_events": .init(outcome.inboundEvents),
                        "deleted.rejected_deliveries": .init(outcome.rejectedDeliveries),
                        "deleted.jobs": .init(outcome.jobs),
                    ])
                }
            } catch {
                logger.warning("retention sweep failed; retrying next interval", ["error": .string(String(describing: error))])
            }
        }
    }

    /// Ends `run` after the batch in progress.
    func stop() {
        stopped.withLock { $0 = true }
        loop.stop()
    }
}
