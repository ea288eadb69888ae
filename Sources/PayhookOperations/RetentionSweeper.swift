package import Foundation
package import PayhookCore
package import PayhookPostgres
import PayhookQueue
import Synchronization

/// Deletes processed deliveries, canonical history, rejected-delivery forensics and finished jobs
/// once they are older than the retention policy allows, in small batches.
///
/// Nothing pins a processed delivery any more (migration 0014 dropped the foreign keys from
/// `payment_events` and `payment_adjustments`); a delivery with a dead letter stays for
/// `dead-letters show`. Deleted rows free space for PostgreSQL to reuse once (auto)vacuum has
/// passed, so a table's size levels off at its retention's worth of rows; the files do not shrink
/// (bench/retention measures both). Any number of processes may sweep at once: a row two
/// sweepers pick is deleted by one and skipped by the other (`RetentionSQL`).
package final class RetentionSweeper: Sendable {
    let pool: PostgresPool
    let policy: RetentionPolicy
    private let logger: Logger
    private let deletedInbound: MetricsRegistry.Counter
    private let deletedPaymentEvents: MetricsRegistry.Counter
    private let deletedRejected: MetricsRegistry.Counter
    private let deletedJobs: MetricsRegistry.Counter
    private let now: @Sendable () -> Date
    private let loop = PeriodicLoop()

    /// What one sweep deleted.
    package struct Outcome: Sendable, Equatable {
        package var inboundEvents = 0
        package var paymentEvents = 0
        package var rejectedDeliveries = 0
        package var jobs = 0
    }

    package init(pool: PostgresPool, policy: RetentionPolicy, metrics: MetricsRegistry, logger: Logger,
         now: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.policy = policy
        self.logger = logger
        self.now = now
        metrics.describe("payhook_retention_deleted_total", type: "counter", help: "Rows deleted by retention, by table.")
        deletedInbound = metrics.counter("payhook_retention_deleted_total", [("table", "inbound_events")])
        deletedPaymentEvents = metrics.counter("payhook_retention_deleted_total", [("table", "payment_events")])
        deletedRejected = metrics.counter("payhook_retention_deleted_total", [("table", "rejected_deliveries")])
        deletedJobs = metrics.counter("payhook_retention_deleted_total", [("table", "jobs")])
    }

    /// Deletes every row past retention, table by table, batch by batch.
    package func sweep() async throws -> Outcome {
        var outcome = Outcome()
        if policy.processedInboundDays > 0 {
            outcome.inboundEvents = try await deleteWindows(RetentionSQL.shared.deleteProcessedInbound, cutoff(policy.processedInboundDays), deletedInbound)
        }
        if policy.paymentEventDays > 0 {
            outcome.paymentEvents = try await deleteWindows(RetentionSQL.shared.deletePaymentEvents, cutoff(policy.paymentEventDays), deletedPaymentEvents)
        }
        if policy.rejectedDays > 0 {
            outcome.rejectedDeliveries = try await deleteWindows(RetentionSQL.shared.deleteRejectedDeliveries, cutoff(policy.rejectedDays), deletedRejected)
        }
        if policy.finishedJobDays > 0 {
            outcome.jobs = try await deleteFinishedJobs(before: cutoff(policy.finishedJobDays))
        }
        return outcome
    }

    private func cutoff(_ days: Int) -> Date {
        now().addingTimeInterval(-Double(days) * 86400)
    }

    /// Walks an append-only table in id order, one window of `batchSize` rows per statement (and
    /// transaction), until a window holds only rows younger than `cutoff` or none at all.
    private func deleteWindows(_ sql: String, _ cutoff: Date, _ counter: MetricsRegistry.Counter) async throws -> Int {
        var total = 0
        var lastID: Int64 = 0
        while true {
            let started = ContinuousClock.now
            let rows = try await pool.query(sql, [.int(lastID), .timestamptz(cutoff), .int(Int64(policy.batchSize))])
            guard let row = rows.rows.first, let reached: Int64 = try row.decode("last_id") else { return total }
            let deleted: Int = try row.decode("deleted")
            total += deleted
            counter.increment(by: UInt64(deleted))
            let scanned: Int = try row.decode("scanned")
            let young: Int = try row.decode("young")
            if young == scanned || loopStopped { return total }
            lastID = reached
            await pause(after: started)
        }
    }

    /// Deletes finished jobs through the queue, which owns `jobs`, one batch (and transaction) of
    /// `batchSize` at a time, until a batch comes back short.
    private func deleteFinishedJobs(before cutoff: Date) async throws -> Int {
        var total = 0
        while true {
            let started = ContinuousClock.now
            let deleted = try await pool.withConnection { connection in
                try await JobQueue.deleteFinished(before: cutoff, limit: policy.batchSize, on: connection)
            }
            total += deleted
            deletedJobs.increment(by: UInt64(deleted))
            if deleted < policy.batchSize || loopStopped { return total }
            await pause(after: started)
        }
    }

    /// Waits `policy.pausePercent` of the time since `started` (see `RetentionPolicy.pausePercent`).
    private func pause(after started: ContinuousClock.Instant) async {
        guard policy.pausePercent > 0 else { return }
        try? await Task.sleep(for: (ContinuousClock.now - started) * (Double(policy.pausePercent) / 100))
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
                        "deleted.payment_events": .init(outcome.paymentEvents),
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
