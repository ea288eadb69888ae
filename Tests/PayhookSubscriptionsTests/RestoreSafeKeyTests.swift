import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookOperations
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// A restored backup (or a staging database cloned from production) repeats the installation's
/// key namespace and rolls its id sequences back, while the provider and the merchant keep what
/// they saw. Nothing payhook sends out may repeat then.
@Suite("Restore-safe keys", .timeLimit(.minutes(5)))
struct RestoreSafeKeyTests {
    @Test("after a backup is restored, the same subscription id and cycle send a new idempotency key and a new callback webhook-id")
    func restoredBackupRepeatsNoKeyAndNoWebhookID() async throws {
        var harness = try await SubscriptionHarness.make("restore_keys")
        defer { harness.stop() }
        let dump = FileManager.default.temporaryDirectory.appendingPathComponent("payhook-\(harness.database.schema).dump").path
        defer { try? FileManager.default.removeItem(atPath: dump) }
        try await Self.run(["pg_dump", "--format=custom", "--schema=\(harness.database.schema)", "--file=\(dump)",
                            "--dbname=\(try TestDatabase.baseURL())"])

        // A hard decline sends the provider a key and the merchant a callback.
        harness.emulator.script(.adyen, [.declined(code: ProviderID.adyen.hardDeclineCode), .declined(code: ProviderID.adyen.hardDeclineCode)])
        let before = try await Self.chargeOnce(harness)

        // Restore the dump taken before that charge, as an operator restoring a backup would.
        await harness.pool.close()
        let admin = try await PostgresConnection.connect(try TestDatabase.baseURL())
        _ = try await admin.query("DROP SCHEMA \(harness.database.schema) CASCADE")
        admin.close()
        try await Self.run(["pg_restore", "--dbname=\(try TestDatabase.baseURL())", dump])
        let pool = PostgresPool(conninfo: harness.database.url, maxConnections: 8, acquireTimeout: .seconds(60))
        harness = SubscriptionHarness(database: harness.database, pool: pool, clock: harness.clock, emulator: harness.emulator,
                                      clients: harness.clients,
                                      queue: JobQueue(pool: pool, retryPolicy: RetryPolicy(base: .milliseconds(100), maximum: .seconds(1), jitter: 0),
                                                      unitRandom: { 1 }))
        #expect(try await harness.int("SELECT count(*) AS n FROM charges") == 0, "the dump predates the charge")

        let after = try await Self.chargeOnce(harness)
        // The premise: the sequences rolled back, so everything derived from ids is the same.
        #expect(after.subscription == before.subscription)
        #expect(RestoreSafeIDs.keyStem(after.key) == RestoreSafeIDs.keyStem(before.key))
        #expect(after.factKeys == before.factKeys && !after.factKeys.isEmpty)
        // What went out is not.
        #expect(after.key != before.key)
        let sentKeys = harness.emulator.executed(.adyen).compactMap(\.idempotencyKey)
        #expect(sentKeys.count == 2 && Set(sentKeys).count == 2, "\(sentKeys)")
        #expect(Set(after.webhookIDs).isDisjoint(with: before.webhookIDs), "before \(before.webhookIDs), after \(after.webhookIDs)")
        // The second customer's charge was declined, not answered with the first one's result.
        #expect(try await harness.chargeSummary(after.subscription) == ["1/1:declined_hard"])
    }

    /// One subscription, one scheduled cycle, its charge job run: what the provider and the
    /// merchant were sent.
    private static func chargeOnce(_ harness: SubscriptionHarness) async throws
        -> (subscription: Int64, key: String, webhookIDs: [String], factKeys: [String]) {
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen), reference: "sub-restore")
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)
        try await harness.runChargeJobs(harness.handler())
        let key = try #require(try await harness.charges(id).first?.idempotencyKey)
        let callbacks = try await harness.pool.query("SELECT webhook_id, fact_key FROM merchant_callbacks ORDER BY id").rows
        return (id, key, try callbacks.map { try $0.decode("webhook_id") }, try callbacks.map { try $0.decode("fact_key") })
    }

    /// Runs one of PostgreSQL's client programs from `PG_BIN` (ops/lib.sh's default), failing
    /// the test with its output when it fails.
    private static func run(_ arguments: [String]) async throws {
        let bin = ProcessInfo.processInfo.environment["PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
        let result = try await Subprocess.capture(["\(bin)/\(arguments[0])"] + arguments.dropFirst(),
                                                    environment: ProcessInfo.processInfo.environment)
        try #require(result.termination == .exited(0), "\(arguments[0]): \(result.standardError)")
    }
}
