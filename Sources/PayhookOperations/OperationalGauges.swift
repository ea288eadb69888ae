import Foundation
import PayhookCore
import PayhookPostgres
import Synchronization

/// Gauges read from the database: inbound backlog, oldest pending delivery's age and open dead
/// letters by source.
///
/// A scrape must never wait on the database (a slow or unreachable database is exactly when
/// `/metrics` must still answer), so a loop refreshes a snapshot every `interval` and the
/// collector only reads it. Every process reports the same database-wide figures; alert rules
/// aggregate them with `max`. `payhook_operations_gauges_refreshed_timestamp_seconds` says how
/// fresh they are.
package final class OperationalGauges: Sendable {
    package struct Snapshot: Sendable, Equatable {
        var backlog: Int64
        var oldestPendingSeconds: Double
        var openInbound: Int64
        var openJob: Int64
        /// (kind, state, count) of jobs not yet succeeded.
        var jobs: [JobCount] = []
        var refreshedAt: Date
    }

    package struct JobCount: Sendable, Equatable {
        var kind: String
        var state: String
        var count: Double
    }

    private let pool: PostgresPool
    private let logger: Logger
    private let interval: Duration
    private let snapshot = Mutex<Snapshot?>(nil)
    private let loop = PeriodicLoop()

    init(pool: PostgresPool, metrics: MetricsRegistry, logger: Logger, interval: Duration = .seconds(15)) {
        self.pool = pool
        self.logger = logger
        self.interval = interval
        metrics.describe("payhook_inbound_backlog", type: "gauge", help: "Inbound events waiting to be processed (status pending).")
        metrics.describe("payhook_inbound_oldest_pending_age_seconds", type: "gauge",
                         help: "Age of the oldest pending inbound event (0 when none).")
        metrics.describe("payhook_dead_letters_open", type: "gauge", help: "Open dead letters by source.")
        metrics.describe("payhook_jobs", type: "gauge",
                         help: "Jobs by kind and state (available, running, retryable, discarded).")
        metrics.describe("payhook_operations_gauges_refreshed_timestamp_seconds", type: "gauge",
                         help: "When the database-backed gauges were last read (Unix time).")
        metrics.addCollector { [weak self] in
            guard let current = self?.current else { return [] }
            return current.jobs.map { ("payhook_jobs", [("kind", $0.kind), ("state", $0.state)], $0.count) } + [
                ("payhook_inbound_backlog", [], Double(current.backlog)),
                ("payhook_inbound_oldest_pending_age_seconds", [], current.oldestPendingSeconds),
                ("payhook_dead_letters_open", [("source", "inbound_event")], Double(current.openInbound)),
                ("payhook_dead_letters_open", [("source", "job")], Double(current.openJob)),
                ("payhook_operations_gauges_refreshed_timestamp_seconds", [], current.refreshedAt.timeIntervalSince1970.rounded()),
            ]
        }
    }

    /// The last snapshot, `nil` before the first successful refresh.
    var current: Snapshot? { snapshot.withLock { $0 } }

    /// Reads the figures once; on failure the previous snapshot stays (and ages visibly).
    func refresh() async throws {
        guard let row = try await pool.query(OperationsSQL.shared.gauges).rows.first else { return }
        let fresh = Snapshot(
            backlog: try row.decode("backlog"), oldestPendingSeconds: try row.decode("oldest_pending_seconds"),
            openInbound: try row.decode("open_inbound"), openJob: try row.decode("open_job"),
            jobs: Self.jobCounts(try row.decode("jobs", as: String.self)), refreshedAt: Date())
        snapshot.withLock { $0 = fresh }
    }

    /// `[["fulfill_order", "available", 3], …]` as counts.
    static func jobCounts(_ json: String) -> [JobCount] {
        guard case .array(let rows)? = JSONValue.parse(Array(json.utf8)) else { return [] }
        return rows.compactMap { row in
            guard case .array(let cells) = row, cells.count == 3, case .string(let kind) = cells[0],
                  case .string(let state) = cells[1], let count = cells[2].scalarText.flatMap(Double.init) else { return nil }
            return JobCount(kind: kind, state: state, count: count)
        }
    }

    /// Refreshes every `interval` until `stop()`.
    func run() async {
        await loop.run(every: interval) {
            do {
                try await refresh()
            } catch {
                logger.debug("operational gauges not refreshed", ["error": .string(String(describing: error))])
            }
        }
    }

    func stop() { loop.stop() }
}
