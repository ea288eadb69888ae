import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

@Suite("Retention: bounded tables, deduplication kept, several sweepers", .timeLimit(.minutes(5)))
struct RetentionTests {
    @Test("an inbox retention shorter than the providers' 30-day retry window is refused; 0 and 30 are accepted")
    func inboxMinimum() throws {
        guard case .failure(let error) = RetentionPolicy.parse(environment: ["PAYHOOK_RETENTION_DAYS": "29"]) else {
            Issue.record("29 days accepted")
            return
        }
        #expect(error.problems.map(\.variable) == ["PAYHOOK_RETENTION_DAYS"])
        #expect(error.description.contains("30"), "\(error.description)")
        #expect(try RetentionPolicy.parse(environment: ["PAYHOOK_RETENTION_DAYS": "30"]).get().processedInboundDays == 30)
        #expect(try RetentionPolicy.parse(environment: ["PAYHOOK_RETENTION_DAYS": "0"]).get().processedInboundDays == 0)
        let history = try RetentionPolicy.parse(environment: ["PAYHOOK_PAYMENT_EVENT_RETENTION_DAYS": "90"]).get()
        #expect(history.paymentEventDays == 90)
        #expect(try RetentionPolicy.parse(environment: ["PAYHOOK_RETENTION_PAUSE_PERCENT": "0"]).get().pausePercent == 0)
        #expect(RetentionPolicy().pausePercent == 100)
    }

    @Test("serve refuses to start with an inbox retention under 30 days, naming the variable")
    func serveRefusesShortRetention() async throws {
        let result = try await PayhookBinary.run(["serve"], environment: TestSecrets.environment.merging([
            "DATABASE_URL": "postgresql:///nowhere?host=/nonexistent", "PAYHOOK_RETENTION_DAYS": "7",
        ]) { $1 })
        #expect(result.termination == .exited(1))
        #expect(result.standardError.contains("PAYHOOK_RETENTION_DAYS"), "\(result.standardError)")
    }

    @Test("a delivery retried on the 30th day after its first receipt is still a duplicate after retention ran")
    func redeliveryAfterRetentionIsDuplicate() async throws {
        try await IngressHarness.with("retention_dedup") { (ingress) async throws in
            let retried = Sign.adyen()
            let expired = Sign.adyen()
            for delivery in [retried, expired] {
                #expect(try await ingress.post(delivery).status == 200)
            }
            let database = ingress.database
            // Both processed long ago, as a busy installation's inbox holds them; history came from
            // each (which used to pin them). The first was received 29 days and 23 hours ago, so
            // Adyen may still retry it; the second 30 days and an hour ago, past Adyen's window.
            try await database.query("""
                UPDATE inbound_events SET status = 'processed', processed_at = now(),
                    received_at = now() - CASE WHEN dedup_key = $1 THEN interval '29 days 23 hours' ELSE interval '30 days 1 hour' END
                """, [.text(retried.expectedDedupKey)])
            try await database.query("""
                INSERT INTO payment_events (inbound_event_id, type, occurred_at) SELECT id, 'payment.authorized', now() FROM inbound_events
                """)

            let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
            let policy = try RetentionPolicy.parse(environment: [:]).get()
            let outcome = try await RetentionSweeper(pool: pool, policy: policy, metrics: MetricsRegistry(), logger: .silent).sweep()
            await pool.close()
            // The harness's own serve runs retention too, first as it starts; on a loaded machine
            // that first sweep can land after the UPDATE above and take the expired row before
            // this one. Which sweeper deleted it does not matter: what is left does.
            #expect(outcome.inboundEvents <= 1)
            #expect(try await database.inboundRows(dedupKey: expired.expectedDedupKey).isEmpty, "the delivery past the retry window goes")
            #expect(try await database.inboundRows(dedupKey: retried.expectedDedupKey).count == 1, "the one inside it stays")

            #expect(try await ingress.post(retried).status == 200)
            let rows = try await database.inboundRows(dedupKey: retried.expectedDedupKey)
            #expect(rows.map(\.status) == ["processed"], "the retry is acknowledged as a duplicate, not stored to be processed again")
            // The control: what retention deleted is stored again, so the sweep did run.
            #expect(try await ingress.post(expired).status == 200)
            #expect(try await database.inboundRows(dedupKey: expired.expectedDedupKey).map(\.status) == ["pending"])
        }
    }

    @Test("a sweep walks many windows past kept rows, and prunes payment events and rejected deliveries by their own age")
    func manyWindows() async throws {
        let database = try await TestDatabase.migrated("retention_windows")
        // 2,500 old processed deliveries with a pending, a dead and a lettered one among them,
        // then 300 recent ones; an old one received after the recent ones (a lagging clock) is
        // beyond the first all-young window and waits for a later sweep.
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, received_at)
            SELECT 'adyen', 'old-' || g, '\\x7b7d',
                   CASE g WHEN 700 THEN 'pending' WHEN 1400 THEN 'dead' ELSE 'processed' END,
                   now() - interval '60 days' + g * interval '1 second'
            FROM generate_series(1, 2500) g
            """)
        try await database.query("""
            INSERT INTO dead_letters (source, source_id, reason, status)
            SELECT 'inbound_event', id, 'x', 'discarded' FROM inbound_events WHERE dedup_key = 'old-2100'
            """)
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, received_at)
            SELECT 'adyen', 'recent-' || g, '\\x7b7d', 'processed', now() - interval '1 day' FROM generate_series(1, 300) g
            """)
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, received_at)
            VALUES ('adyen', 'late-old', '\\x7b7d', 'processed', now() - interval '40 days')
            """)
        try await database.query("""
            INSERT INTO payment_events (type, occurred_at, recorded_at)
            SELECT 'payment.captured', now(), now() - CASE WHEN g <= 1200 THEN interval '100 days' ELSE interval '10 days' END
            FROM generate_series(1, 1500) g
            """)
        try await database.query("""
            INSERT INTO rejected_deliveries (provider, reason, body_size, body, received_at)
            SELECT 'pxp', 'signature_mismatch', 2, '\\x7b7d', now() - CASE WHEN g <= 450 THEN interval '8 days' ELSE interval '1 day' END
            FROM generate_series(1, 500) g
            """)

        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        var policy = RetentionPolicy()
        policy.paymentEventDays = 90
        policy.batchSize = 100
        let sweeper = RetentionSweeper(pool: pool, policy: policy, metrics: MetricsRegistry(), logger: .silent)
        let outcome = try await sweeper.sweep()
        #expect(outcome == RetentionSweeper.Outcome(inboundEvents: 2497, paymentEvents: 1200, rejectedDeliveries: 450, jobs: 0))
        let left = try await database.string("""
            SELECT string_agg(dedup_key, ',' ORDER BY id) AS v FROM inbound_events WHERE dedup_key NOT LIKE 'recent-%'
            """)
        #expect(left == "old-700,old-1400,old-2100,late-old")
        #expect(try await database.int("SELECT count(*) AS n FROM inbound_events WHERE dedup_key LIKE 'recent-%'") == 300)
        #expect(try await database.int("SELECT count(*) AS n FROM payment_events") == 300)
        #expect(try await database.int("SELECT count(*) AS n FROM rejected_deliveries") == 50)

        // Once the rows before it have gone too, the late one is reached.
        try await database.query("UPDATE inbound_events SET received_at = now() - interval '31 days' WHERE dedup_key LIKE 'recent-%'")
        #expect(try await sweeper.sweep().inboundEvents == 301)
        await pool.close()
    }

    @Test("two `payhook retention sweep` processes at once delete every old row exactly once and keep every other")
    func twoProcesses() async throws {
        let database = try await TestDatabase.migrated("retention_two")
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, received_at)
            SELECT 'mercadopago', 'k-' || g, '\\x7b7d', 'processed',
                   now() - CASE WHEN g <= 6000 THEN interval '45 days' ELSE interval '2 days' END
            FROM generate_series(1, 7000) g
            """)
        try await database.query("""
            INSERT INTO payment_events (type, occurred_at, recorded_at, inbound_event_id)
            SELECT 'payment.captured', now(), now() - CASE WHEN g <= 3000 THEN interval '800 days' ELSE interval '2 days' END, g
            FROM generate_series(1, 4000) g
            """)
        try await database.query("""
            INSERT INTO jobs (kind, unique_key, state, finalized_at)
            SELECT 'fulfill_order', 'j-' || g, 'succeeded', now() - CASE WHEN g <= 2000 THEN interval '9 days' ELSE interval '1 day' END
            FROM generate_series(1, 2500) g
            """)
        let environment = ["DATABASE_URL": database.url, "PAYHOOK_RETENTION_DAYS": "30"]
        async let first = PayhookBinary.run(["retention", "sweep", "--json"], environment: environment)
        async let second = PayhookBinary.run(["retention", "sweep", "--json"], environment: environment)
        let results = try await [first, second]
        var deleted = (inbound: 0, payment: 0, jobs: 0)
        for result in results {
            #expect(result.termination == .exited(0), "\(result.standardError)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
                                        "\(result.standardOutput)")
            deleted.inbound += document["inbound_events"] as? Int ?? -1
            deleted.payment += document["payment_events"] as? Int ?? -1
            deleted.jobs += document["jobs"] as? Int ?? -1
        }
        #expect(deleted.inbound == 6000 && deleted.payment == 3000 && deleted.jobs == 2000, "\(deleted)")
        #expect(try await database.int("SELECT count(*) AS n FROM inbound_events") == 1000)
        #expect(try await database.int("SELECT count(*) AS n FROM inbound_events WHERE received_at < now() - interval '30 days'") == 0)
        #expect(try await database.int("SELECT count(*) AS n FROM payment_events") == 1000)
        #expect(try await database.int("SELECT count(*) AS n FROM jobs") == 500)
    }
}
