import Foundation
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp

/// `payhook serve` with every role through Debian's PgBouncer (1.18) in transaction mode, with
/// `PAYHOOK_DATABASE_POOLING=transaction` and no session URL (so it polls), under load: the
/// multi-process stream (full and thin webhooks, duplicates, orders, subscriptions) with a few
/// hundred deliveries, sent from several threads at once.
@Suite("serve behind PgBouncer in transaction mode", .timeLimit(.minutes(4)))
struct PgBouncerServeTests {
    @Test("every acknowledged delivery stored and processed, charges and callbacks run, no statement error")
    func serveThroughTransactionPooler() async throws {
        let cluster = try await DedicatedCluster.start(port: 54365)
        try await cluster.whileRunning {
            // Fewer server sessions than payhook's pool (16) and listeners: they are shared.
            let bouncer = try await PgBouncer.start(in: cluster, port: 54375, poolSize: 6)
            try await bouncer.whileRunning {
                try await run(cluster: cluster, bouncer: bouncer)
            }
        }
    }

    private func run(cluster: DedicatedCluster, bouncer: PgBouncer) async throws {
        // Migrated through the pooler, as `payhook migrate` does with the switch set.
        let migrator = PostgresMigrator(conninfo: bouncer.url, migrations: try SchemaMigrations.all(), pooling: .transaction)
        try await migrator.migrate()
        // Checks read the server directly.
        let database = TestDatabase(schema: "public", url: cluster.url)
        let pool = PostgresPool(conninfo: cluster.url, maxConnections: 2)
        defer { Task { await pool.close() } }
        let emulator = try ProviderEmulator()
        try emulator.start()
        defer { emulator.stop() }
        let endpoint = try MerchantEndpoint()
        defer { endpoint.stop() }
        let children = Children()
        defer { children.killAll() }

        var random = SplitMix64(seed: 31)
        var world = MultiProcessWorld(emulator: emulator)
        world.perKind = 30
        let stream = world.stream(using: &random)
        let orders = try await world.registerOrders(pool: pool)
        let subscriptions = try await world.seedSubscriptions(pool: pool)

        var environment = ChargeCrashTests.environment(database, emulator)
        environment["PAYHOOK_FULFILLMENT_URL"] = endpoint.url
        environment["PAYHOOK_FULFILLMENT_SECRET"] = FulfillmentHarness.secret
        environment["PAYHOOK_DATABASE_POOLING"] = "transaction"
        let served = try await children.serve(databaseURL: bouncer.url, environment: environment)
        let sender = StreamSender(steps: stream, ports: [served.port])
        await sender.send(0..<stream.count)
        #expect(stream.count >= 500, "only \(stream.count) deliveries")
        let unacknowledged = sender.unacknowledged
        try #require(unacknowledged.isEmpty, "deliveries not acknowledged: \(unacknowledged.prefix(5))")
        let acknowledged = sender.acknowledgedKeys

        var missing: [String] = []
        let quiet = await eventually(timeout: .seconds(90)) {
            missing = (try? await world.outstanding(pool: pool, acknowledged: acknowledged, orders: orders,
                                                    subscriptions: subscriptions, endpoint: endpoint)) ?? ["database unreadable"]
            return missing.isEmpty
        }
        served.child.send(signal: SIGTERM)
        let ended = await served.child.wait(timeout: .seconds(30))
        let log = served.child.standardOutput + served.child.standardError
        #expect(quiet, "not settled within 90 s after the stream: \(missing.joined(separator: "; ")); log: \(log.suffix(1500))")
        #expect(ended == .exited(0), "serve did not exit 0 on SIGTERM: \(String(describing: ended))")

        // Stored once, processed once.
        let processed = Set(try await pool.query("SELECT dedup_key FROM inbound_events WHERE status = 'processed'").rows
            .map { try $0.decode("dedup_key", as: String.self) })
        let notProcessed = Set(acknowledged).subtracting(processed)
        #expect(notProcessed.isEmpty, "\(notProcessed.count) acknowledged deliveries not processed: \(notProcessed.prefix(5))")
        #expect(try await database.int("SELECT count(*) AS n FROM inbound_events") == Int64(Set(acknowledged).count))
        #expect(try await world.wrongStatuses(pool: pool).isEmpty)
        // Charges and merchant callbacks ran.
        #expect(try await database.int("SELECT count(*) AS n FROM charges WHERE status = 'succeeded'") == Int64(subscriptions.count))
        #expect(try await database.int("""
            SELECT count(DISTINCT order_id) AS n FROM merchant_callbacks WHERE type = 'order.paid'
            """) == Int64(orders.count))
        let letters = try await pool.query("SELECT reason, coalesce(error, '') AS error FROM dead_letters").rows
            .map { "\(try $0.decode("reason", as: String.self)): \(try $0.decode("error", as: String.self))" }
        #expect(letters.isEmpty, "dead letters: \(letters)")

        // No statement error anywhere: not in payhook's log, not in PgBouncer's, not on the server.
        let errorLines = log.split(separator: "\n").filter {
            $0.contains("\"level\":\"error\"") || $0.contains("SQLSTATE") || $0.contains("prepared statement")
        }
        #expect(errorLines.isEmpty, "errors in the serve log: \(errorLines.prefix(5))")
        let warning = log.split(separator: "\n").filter { $0.contains("PAYHOOK_SESSION_DATABASE_URL") }
        #expect(warning.count == 1, "the polling notice should be logged once: \(warning)")
        let bouncerErrors = bouncer.log.split(separator: "\n").filter { $0.contains("ERROR") || $0.contains("WARNING") }
        #expect(bouncerErrors.isEmpty, "PgBouncer reported: \(bouncerErrors.prefix(5))")
        let serverLog = (try? String(contentsOfFile: cluster.directory + "/server.log", encoding: .utf8)) ?? ""
        let statementErrors = serverLog.split(separator: "\n").filter { $0.contains("prepared statement") || $0.contains("bind message") }
        #expect(statementErrors.isEmpty, "the server refused statements: \(statementErrors.prefix(5))")
    }
}
