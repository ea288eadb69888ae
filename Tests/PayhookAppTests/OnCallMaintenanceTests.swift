import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookApp

@Suite("On-call: retention, gauges, SQL", .timeLimit(.minutes(5)))
struct OnCallMaintenanceTests {
    @Test("retention deletes old processed deliveries, also those history came from, and old rejected ones, in batches")
    func retention() async throws {
        let database = try await TestDatabase.migrated("oncall_retention")
        func insert(_ key: String, status: String, daysAgo: Int) async throws -> Int64 {
            try #require(try await database.query("""
                INSERT INTO inbound_events (provider, dedup_key, body, status, received_at)
                VALUES ('adyen', $1, '\\x7b7d', $2, now() - make_interval(days => $3::int)) RETURNING id
                """, [.text(key), .text(status), .int(Int64(daysAgo))]).rows.first?.decode("id"))
        }
        for n in 0..<5 { _ = try await insert("old-\(n)", status: "processed", daysAgo: 40) }
        _ = try await insert("recent", status: "processed", daysAgo: 2)
        _ = try await insert("old-pending", status: "pending", daysAgo: 40)
        _ = try await insert("old-dead", status: "dead", daysAgo: 40)
        // History that came from a delivery no longer keeps it (migration 0014): the event stays,
        // with the id of a delivery that is gone.
        let referenced = try await insert("old-referenced", status: "processed", daysAgo: 40)
        try await database.query("INSERT INTO payment_events (inbound_event_id, type, occurred_at) VALUES ($1, 'payment.captured', now())",
                                 [.int(referenced)])
        let lettered = try await insert("old-lettered", status: "processed", daysAgo: 40)
        try await database.query("INSERT INTO dead_letters (source, source_id, reason, status) VALUES ('inbound_event', $1, 'x', 'replayed')",
                                 [.int(lettered)])
        try await database.query("""
            INSERT INTO rejected_deliveries (provider, reason, body_size, body, received_at)
            VALUES ('pxp', 'signature_mismatch', 2, '\\x7b7d', now() - interval '10 days'),
                   ('pxp', 'signature_mismatch', 2, '\\x7b7d', now() - interval '1 day')
            """)

        try await database.query("""
            INSERT INTO jobs (kind, unique_key, state, finalized_at) VALUES
                ('fulfill_order', 'old-succeeded', 'succeeded', now() - interval '8 days'),
                ('fulfill_order', 'recent-succeeded', 'succeeded', now() - interval '1 day'),
                ('fulfill_order', 'old-discarded', 'discarded', now() - interval '30 days')
            """)
        try await database.query("INSERT INTO jobs (kind, unique_key) VALUES ('fulfill_order', 'available')")

        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        var policy = RetentionPolicy()
        policy.batchSize = 2
        let metrics = MetricsRegistry()
        let sweeper = RetentionSweeper(pool: pool, policy: policy, metrics: metrics, logger: .silent)
        let outcome = try await sweeper.sweep()
        #expect(outcome == RetentionSweeper.Outcome(inboundEvents: 6, rejectedDeliveries: 1, jobs: 1))
        #expect(try await database.string("SELECT string_agg(unique_key, ',' ORDER BY unique_key) AS v FROM jobs")
                == "available,old-discarded,recent-succeeded")
        let left = try await database.string("SELECT string_agg(dedup_key, ',' ORDER BY dedup_key) AS v FROM inbound_events")
        #expect(left == "old-dead,old-lettered,old-pending,recent")
        #expect(try await database.int("SELECT count(*) AS n FROM payment_events WHERE inbound_event_id = $1", [.int(referenced)]) == 1)
        #expect(try await database.int("SELECT count(*) AS n FROM rejected_deliveries") == 1)
        #expect(metrics.counterValue("payhook_retention_deleted_total", [("table", "inbound_events")]) == 6)
        #expect(try await sweeper.sweep() == RetentionSweeper.Outcome(), "a second sweep finds nothing")
        await pool.close()
    }

    @Test("retention settings come from the environment, every problem reported")
    func retentionPolicy() throws {
        let parsed = try RetentionPolicy.parse(environment: ["PAYHOOK_RETENTION_DAYS": "90", "PAYHOOK_REJECTED_RETENTION_DAYS": "0"]).get()
        #expect(parsed.processedInboundDays == 90 && parsed.rejectedDays == 0)
        #expect(try RetentionPolicy.parse(environment: [:]).get() == RetentionPolicy())
        guard case .failure(let error) = RetentionPolicy.parse(environment: [
            "PAYHOOK_RETENTION_DAYS": "-1", "PAYHOOK_RETENTION_INTERVAL_SECONDS": "soon",
        ]) else {
            Issue.record("invalid values accepted")
            return
        }
        #expect(error.problems.map(\.variable).sorted() == ["PAYHOOK_RETENTION_DAYS", "PAYHOOK_RETENTION_INTERVAL_SECONDS"])
    }

    @Test("the database gauges report backlog, oldest pending age and open letters by source, and /metrics still parses")
    func gauges() async throws {
        let database = try await TestDatabase.migrated("oncall_gauges")
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, received_at)
            VALUES ('pxp', 'g1', '\\x7b7d', now() - interval '10 minutes'), ('pxp', 'g2', '\\x7b7d', now())
            """)
        try await database.seedDeadInbound()
        try await database.seedDeadJob()
        try await database.seedDeadJob()
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let metrics = MetricsRegistry()
        let gauges = OperationalGauges(pool: pool, metrics: metrics, logger: .silent)
        #expect(!metrics.renderPrometheus().contains("payhook_inbound_backlog"), "nothing reported before the first read")
        try await gauges.refresh()
        let text = metrics.renderPrometheus()
        #expect(metricValue(text, "payhook_inbound_backlog", "") == 2)
        #expect((metricValue(text, "payhook_inbound_oldest_pending_age_seconds", "") ?? 0) >= 599)
        #expect(metricValue(text, "payhook_dead_letters_open", "source=\"inbound_event\"") == 1)
        #expect(metricValue(text, "payhook_dead_letters_open", "source=\"job\"") == 2)
        // Every line is a comment or `name{labels} value`.
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            #expect(parts.count == 2 && Double(parts[1]) != nil, "unparseable sample: \(line)")
        }
        await pool.close()
    }

    @Test("two processes' maintenance loops at once, each with its own pool: the same correct gauges, every old row deleted once, no error logged")
    func twoMaintenanceLoops() async throws {
        let database = try await TestDatabase.migrated("oncall_two_loops")
        // What retention must delete (old processed deliveries, old finished jobs) beside what
        // the gauges count (pending deliveries, open letters, unfinished jobs).
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, received_at)
            SELECT 'pxp', 'old-' || g, '\\x7b7d', 'processed', now() - interval '45 days' FROM generate_series(1, 2500) g
            """)
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, received_at)
            SELECT 'pxp', 'pending-' || g, '\\x7b7d', now() - g * interval '1 minute' FROM generate_series(1, 7) g
            """)
        try await database.query("""
            INSERT INTO jobs (kind, unique_key, state, finalized_at)
            SELECT 'fulfill_order', 'done-' || g, 'succeeded', now() - interval '9 days' FROM generate_series(1, 1500) g
            """)
        try await database.query("INSERT INTO jobs (kind, unique_key) SELECT 'merchant_callback', 'due-' || g FROM generate_series(1, 3) g")
        try await database.seedDeadInbound()
        try await database.seedDeadJob()

        struct Process {
            let pool: PostgresPool
            let metrics: MetricsRegistry
            let maintenance: BackgroundMaintenance
            let task: Task<Void, Never>
        }
        let problems = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .warning) { line in problems.withLock { $0.append(line) } }
        var policy = RetentionPolicy(interval: .seconds(3600))
        // Small batches, so the two sweeps' statements interleave many times over.
        policy.batchSize = 100
        policy.pausePercent = 0
        let processes = (0..<2).map { _ in
            let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
            let metrics = MetricsRegistry()
            let maintenance = BackgroundMaintenance(pool: pool, policy: policy, metrics: metrics, logger: logger)
            return Process(pool: pool, metrics: metrics, maintenance: maintenance, task: Task { await maintenance.run() })
        }
        func deleted(_ table: String) -> Double {
            processes.map { metricValue($0.metrics.renderPrometheus(), "payhook_retention_deleted_total", "table=\"\(table)\"") ?? 0 }
                .reduce(0, +)
        }
        // Each loop sweeps and measures once at start, then waits an hour.
        let settled = await eventually(timeout: .seconds(60)) {
            let processed = try? await database.int("SELECT count(*) AS n FROM inbound_events WHERE status = 'processed'")
            let finished = try? await database.int("SELECT count(*) AS n FROM jobs WHERE state = 'succeeded'")
            return processes.allSatisfy { $0.maintenance.gauges.current != nil } && processed == 0 && finished == 0
        }
        for process in processes { process.maintenance.stop() }
        for process in processes {
            await process.task.value
            await process.pool.close()
        }

        #expect(settled, "the two loops did not finish their first sweep and refresh")
        #expect(deleted("inbound_events") == 2500)
        #expect(deleted("jobs") == 1500)
        for (index, process) in processes.enumerated() {
            let snapshot = try #require(process.maintenance.gauges.current, "process \(index) has no gauges")
            #expect(snapshot.backlog == 7, "process \(index)")
            #expect(snapshot.oldestPendingSeconds >= 7 * 60, "process \(index)")
            #expect(snapshot.openInbound == 1 && snapshot.openJob == 1, "process \(index)")
        }
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0 })")
    }

    @Test("a periodic loop stops promptly in the middle of a long pause")
    func loopStops() async throws {
        let loop = PeriodicLoop()
        let runs = Counter()
        let task = Task { await loop.run(every: .seconds(3600)) { runs.add() } }
        #expect(await eventually { runs.value == 1 })
        loop.stop()
        await task.value
        #expect(runs.value == 1)
    }
}

private final class Counter: Sendable {
    private let count = Synchronization.Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
