import Foundation
package import PayhookCore
package import PayhookPostgres

/// A delivery that failed verification, kept for forensics.
package struct RejectedDelivery: Sendable {
    let provider: ProviderID
    let account: String
    let reason: String
    let remoteAddress: String
    let receivedAt: Date
    let headersJSON: String
    let body: [UInt8]
}

/// Records rejected deliveries in `rejected_deliveries`, without making the 401 wait for it.
///
/// Bounded on purpose: bodies are truncated to `maxStoredBodyBytes` and the queue holds at most
/// `capacity` rows, so a flood of forged requests costs a counter increment, not unbounded
/// memory or disk. Dropped rows are counted in `payhook_rejected_deliveries_dropped_total`.
package final class RejectedDeliveryRecorder: Sendable {
    static let maxStoredBodyBytes = 4096

    private let pool: PostgresPool
    private let metrics: MetricsRegistry
    private let logger: Logger
    private let queue: GroupCommitQueue<RejectedDelivery>

    package init(pool: PostgresPool, metrics: MetricsRegistry, logger: Logger, capacity: Int = 1000) {
        self.pool = pool
        self.metrics = metrics
        self.logger = logger
        self.queue = GroupCommitQueue(maxBatch: 200, capacity: capacity) { batch in
            await Self.insert(batch, pool: pool, logger: logger)
        }
    }

    func record(_ rejected: RejectedDelivery) {
        if !queue.submit(rejected) {
            metrics.increment("payhook_rejected_deliveries_dropped_total")
        }
    }

    package func run() async { await queue.runWorker() }
    package func stop() { queue.stop() }

    private static func insert(_ batch: [RejectedDelivery], pool: PostgresPool, logger: Logger) async {
        var sql = "INSERT INTO rejected_deliveries (provider, account, reason, remote_addr, received_at, headers, body_size, body) VALUES "
        var binds: [PostgresValue] = []
        for (index, row) in batch.enumerated() {
            let base = index * 8
            if index > 0 { sql += "," }
            sql += "(" + (1...8).map { "$\(base + $0)" }.joined(separator: ",") + ")"
            binds += [
                .text(row.provider.rawValue), .text(row.account), .text(row.reason), .text(row.remoteAddress),
                .timestamptz(row.receivedAt), .jsonb(row.headersJSON), .int(Int64(row.body.count)),
                .bytea(Array(row.body.prefix(maxStoredBodyBytes))),
            ]
        }
        do {
            _ = try await pool.query(sql, binds)
        } catch {
            // Forensics are best effort: the delivery was already refused with 401.
            logger.warning("rejected deliveries not recorded", ["error": .string(String(describing: error)), "count": .init(batch.count)])
        }
    }
}

extension RejectedDeliveryRecorder: Service {
    package var serviceName: String { "rejected-delivery recorder" }
}
