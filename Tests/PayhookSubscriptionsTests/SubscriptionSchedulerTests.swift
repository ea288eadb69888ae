import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// The scheduler against a real PostgreSQL with a hand-moved clock: one first attempt per
/// cycle, on time, whatever the number of schedulers.
@Suite("Subscription scheduler", .timeLimit(.minutes(5)))
struct SubscriptionSchedulerTests {
    @Test("each monthly cycle is scheduled once, when due: charge row, job with the key as unique_key, schedule advanced")
    func cyclesOnTime() async throws {
        let harness = try await SubscriptionHarness.make("sub_sched_cycles", emulator: false)
        let token = try await harness.seedToken(.adyen)
        let id = try await harness.subscribe(token: token, every: 1, unit: .month)
        let scheduler = harness.scheduler()

        #expect(try await scheduler.tick(now: harness.clock.now) == 1)
        #expect(try await scheduler.tick(now: harness.clock.now) == 0)
        harness.clock.advance(by: 31 * 86_400 - 1)  // 2030-02-01T09:59:59Z
        #expect(try await scheduler.tick(now: harness.clock.now) == 0)
        harness.clock.advance(by: 1)
        #expect(try await scheduler.tick(now: harness.clock.now) == 1)
        harness.clock.advance(by: 28 * 86_400)  // 2030-03-01T10:00:00Z
        #expect(try await scheduler.tick(now: harness.clock.now) == 1)

        let charges = try await harness.charges(id)
        let ns = try await harness.namespace()
        #expect(charges.map { RestoreSafeIDs.keyStem($0.idempotencyKey) } == (1...3).map { "\(ns)-sub-\(id)-c\($0)-a1" })
        #expect(charges.allSatisfy { $0.status == "pending" && $0.attempt == 1 && $0.amountMinor == 1999 && $0.provider == "adyen" })
        #expect(charges.map { SubscriptionHarness.format($0.scheduledAt) }
                == ["2030-01-01T10:00:00Z", "2030-02-01T10:00:00Z", "2030-03-01T10:00:00Z"])
        let subscription = try await harness.subscription(id)
        #expect(subscription.cycle == 4)
        #expect(SubscriptionHarness.format(subscription.nextChargeAt) == "2030-04-01T10:00:00Z")
        let jobs = try await harness.pool.query(
            "SELECT unique_key, payload->>'idempotency_key' AS key, payload->>'provider' AS provider, max_attempts FROM jobs WHERE kind = 'charge_recurring' ORDER BY id")
        #expect(try jobs.rows.map { try $0.decode("unique_key", as: String.self) } == charges.map(\.idempotencyKey))
        #expect(try jobs.rows.map { try $0.decode("key", as: String.self) } == charges.map(\.idempotencyKey))
        #expect(try jobs.rows.allSatisfy { try $0.decode("provider", as: String.self) == "adyen" && $0.decode("max_attempts", as: Int.self) == 20 })
    }

    @Test("a scheduler down for days charges each missed cycle once with catch-up all (within PAYHOOK_SCHEDULER_MAX_CATCH_UP), only the current one with latest", arguments: [
        SubscriptionSettings.CatchUp.all, .latest,
    ])
    func catchUp(mode: SubscriptionSettings.CatchUp) async throws {
        var harness = try await SubscriptionHarness.make("sub_sched_catchup", emulator: false)
        harness.settings.maxCatchUp = 5
        let token = try await harness.seedToken(.pxp)
        let id = try await harness.subscribe(token: token, every: 1, unit: .day)
        let scheduler = harness.scheduler(catchUp: mode)
        #expect(try await scheduler.tick(now: harness.clock.now) == 1)
        harness.clock.advance(by: 5 * 86_400 + 3600)  // cycles 2…6 fell due while it was down
        let created = try await scheduler.tick(now: harness.clock.now)
        #expect(created == (mode == .all ? 5 : 1))
        #expect(try await scheduler.tick(now: harness.clock.now) == 0)
        let cycles = try await harness.charges(id).map(\.cycle)
        #expect(cycles == (mode == .all ? [1, 2, 3, 4, 5, 6] : [1, 6]))
        #expect(try await harness.subscription(id).cycle == 7)
    }

    @Test("max_cycles completes the subscription after its last cycle; canceled and paused ones are not scheduled")
    func completesAndStops() async throws {
        let harness = try await SubscriptionHarness.make("sub_sched_complete", emulator: false)
        let token = try await harness.seedToken(.mercadopago)
        let limited = try await harness.subscribe(token: token, every: 1, unit: .week, maxCycles: 2)
        let canceled = try await harness.subscribe(token: token, every: 1, unit: .week)
        let paused = try await harness.subscribe(token: token, every: 1, unit: .week)
        let action = OperatorAction(actor: "test")
        _ = try await harness.operations.cancel(id: canceled, by: action)
        _ = try await harness.operations.pause(id: paused, by: action)
        let scheduler = harness.scheduler()
        harness.clock.advance(by: 30 * 86_400)
        #expect(try await scheduler.tick(now: harness.clock.now) == 2)
        #expect(try await harness.charges(limited).map(\.cycle) == [1, 2])
        let subscription = try await harness.subscription(limited)
        #expect(subscription.status == .completed)
        #expect(try await harness.charges(canceled).isEmpty)
        #expect(try await harness.charges(paused).isEmpty)
        harness.clock.advance(by: 30 * 86_400)
        #expect(try await scheduler.tick(now: harness.clock.now) == 0)
    }

    @Test("two schedulers ticking at the same time over hundreds of due subscriptions schedule each cycle exactly once")
    func racingSchedulers() async throws {
        let harness = try await SubscriptionHarness.make("sub_sched_race", emulator: false)
        let count = 240
        let token = try await harness.seedToken(.adyen)
        for index in 0..<count {
            try await harness.subscribe(token: token, every: 1, unit: .day, reference: "race-\(index)")
        }
        // Small batches, so the two interleave many transactions.
        let first = harness.scheduler(batchSize: 7)
        let second = harness.scheduler(batchSize: 11)
        var created = 0
        for _ in 0..<3 {
            let now = harness.clock.now
            async let a = first.tick(now: now)
            async let b = second.tick(now: now)
            created += try await a + b
            harness.clock.advance(by: 86_400)
        }
        // The counts are what each scheduler planned, so a cycle planned twice shows here even
        // though the unique key would absorb the second insert.
        #expect(created == count * 3)
        #expect(try await harness.int("SELECT count(*) AS n FROM charges") == Int64(count * 3))
        #expect(try await harness.int("SELECT count(DISTINCT (subscription_id, cycle)) AS n FROM charges") == Int64(count * 3))
        #expect(try await harness.int("SELECT count(*) AS n FROM jobs WHERE kind = 'charge_recurring'") == Int64(count * 3))
        #expect(try await harness.int("SELECT count(*) AS n FROM subscriptions WHERE cycle = 4") == Int64(count))
    }

    @Test("the run loop schedules at start and stops when asked")
    func runLoop() async throws {
        let harness = try await SubscriptionHarness.make("sub_sched_loop", emulator: false)
        let token = try await harness.seedToken(.adyen)
        let id = try await harness.subscribe(token: token)
        let scheduler = harness.scheduler()
        let running = Task { await scheduler.run() }
        let scheduled = await eventually(timeout: .seconds(60)) {
            (try? await harness.charges(id).count) == 1
        }
        #expect(scheduled)
        scheduler.stop()
        await running.value
    }
}
