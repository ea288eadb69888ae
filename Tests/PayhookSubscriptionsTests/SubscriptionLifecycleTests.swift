import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// Cycles that fell due are owed: a pause, a cancel, downtime or a start date in the past
/// never drops one silently and never charges a year of them at once.
@Suite("Subscription cycles across pauses, cancels and catch-up", .timeLimit(.minutes(5)))
struct SubscriptionLifecycleTests {
    private func callbackTypes(_ harness: SubscriptionHarness, _ subscription: Int64) async throws -> [String] {
        try await harness.pool.query("SELECT type FROM merchant_callbacks WHERE subscription_id = $1 ORDER BY id", [.int(subscription)])
            .rows.map { try $0.decode("type", as: String.self) }
    }

    @Test("a cycle scheduled before a pause waits while paused and is charged once on resume, even when resumed before the next cycle")
    func pauseThenResumeCharges() async throws {
        let harness = try await SubscriptionHarness.make("life_pause_resume")
        defer { harness.stop() }
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        _ = try await harness.operations.pause(id: id, by: OperatorAction(actor: "ops"))
        try await harness.runChargeJobs(harness.handler(), rounds: 3)
        #expect(try await harness.chargeSummary(id) == ["1/1:pending"])
        #expect(harness.emulator.executed(.adyen).isEmpty)

        harness.clock.advance(by: 3_600)  // resumed long before cycle 2 is due
        _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "ops"))
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.executedByKey(.adyen) == [try await harness.key(id, cycle: 1): 1])
        // A second resume (or a replay of the wake-up) charges nothing more.
        _ = try await harness.operations.pause(id: id, by: OperatorAction(actor: "ops"))
        _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "ops"))
        try await harness.runChargeJobs(harness.handler())
        #expect(harness.emulator.executed(.adyen).count == 1)
    }

    @Test("cycles that fell due while paused are not charged after resuming, and one subscription.cycles_skipped names them")
    func resumeReportsPausedCycles() async throws {
        let harness = try await SubscriptionHarness.make("life_resume_skips", emulator: false)
        defer { harness.stop() }
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen), every: 1, unit: .day)
        try await harness.scheduler().tick(now: harness.clock.now)
        _ = try await harness.operations.pause(id: id, by: OperatorAction(actor: "ops"))
        harness.clock.advance(by: 3 * 86_400 + 60)  // cycles 2, 3 and 4 fall due while paused
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 0)
        _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "ops"))
        #expect(try await harness.subscription(id).cycle == 5)
        #expect(try await callbackTypes(harness, id) == ["subscription.cycles_skipped"])
        let body = try await harness.text("SELECT body AS v FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)])
        #expect(body?.contains(#""first_cycle":2,"last_cycle":4,"count":3"#) == true, "\(body ?? "")")
    }

    @Test("a dunning retry waiting when the subscription is paused runs after resume at its own due time, not earlier")
    func dunningWaitsForItsDueTime() async throws {
        let harness = try await SubscriptionHarness.make("life_pause_dunning")
        defer { harness.stop() }
        harness.emulator.script(.adyen, [.declined(code: ProviderID.adyen.softDeclineCode)])
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        try await harness.runChargeJobs(harness.handler(), rounds: 1)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:pending"])
        _ = try await harness.operations.pause(id: id, by: OperatorAction(actor: "ops"))
        _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "ops"))
        // Resumed an hour in: the retry is due after a day and stays queued.
        #expect(try await harness.int("SELECT count(*) AS n FROM jobs WHERE kind = 'charge_recurring' AND state IN ('available', 'retryable') AND run_at <= now()") == 0)
        harness.clock.advance(by: 86_400)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:succeeded"])
    }

    @Test("a cycle scheduled before a cancel is skipped and reported with subscription.charge_skipped, once")
    func cancelReportsSkip() async throws {
        let harness = try await SubscriptionHarness.make("life_cancel")
        defer { harness.stop() }
        let id = try await harness.subscribe(token: try await harness.seedToken(.pxp))
        try await harness.scheduler().tick(now: harness.clock.now)
        _ = try await harness.operations.cancel(id: id, by: OperatorAction(actor: "ops"))
        try await harness.runChargeJobs(harness.handler())
        try await harness.pool.query("UPDATE jobs SET state = 'available', run_at = now(), attempt = 0 WHERE kind = 'charge_recurring'")
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:skipped"])
        #expect(try await callbackTypes(harness, id) == ["subscription.charge_skipped"])
        #expect(harness.emulator.executed(.pxp).isEmpty)
    }

    @Test("after downtime at most PAYHOOK_SCHEDULER_MAX_CATCH_UP cycles of one subscription are charged, the latest; the older ones are reported once")
    func catchUpIsBounded() async throws {
        var harness = try await SubscriptionHarness.make("life_catch_up", emulator: false)
        defer { harness.stop() }
        harness.settings.maxCatchUp = 3
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen), every: 1, unit: .day)
        harness.clock.advance(by: 9 * 86_400 + 60)  // cycles 1…10 due
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 3)
        #expect(try await harness.charges(id).map(\.cycle) == [8, 9, 10])
        #expect(try await harness.subscription(id).cycle == 11)
        #expect(try await callbackTypes(harness, id) == ["subscription.cycles_skipped"])
        let data = try await harness.text("SELECT body::text AS v FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)])
        #expect(data?.contains(#""first_cycle":1,"last_cycle":7,"count":7"#) == true, "\(data ?? "")")
        #expect(harness.metrics.counterValue("payhook_cycles_skipped_total", []) == 7)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 0)
        // The default bound is 3; without downtime nothing is skipped.
        #expect(SubscriptionSettings().maxCatchUp == 3)
        harness.clock.advance(by: 86_400)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)
        #expect(try await callbackTypes(harness, id).count == 1)
    }

    @Test("the catch-up plan keeps the latest cycles and names the skipped range; latest keeps one")
    func catchUpPlan() throws {
        let start = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01T00:00:00Z
        let daily = try #require(SubscriptionInterval(every: 1, unit: .day))
        let now = start.addingTimeInterval(9 * 86_400 + 1)  // cycles 1…10 due
        let bounded = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 2, maxCycles: nil, endAt: nil, now: now,
                                                 catchUp: .all, maxCatchUp: 3)
        #expect(bounded.charges.map(\.cycle) == [8, 9, 10] && bounded.skipped == 2...7 && bounded.nextCycle == 11)
        let latest = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 2, maxCycles: nil, endAt: nil, now: now,
                                                catchUp: .latest, maxCatchUp: 3)
        #expect(latest.charges.map(\.cycle) == [10] && latest.skipped == 2...9)
        let onTime = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 9, maxCycles: nil, endAt: nil, now: now,
                                                catchUp: .all, maxCatchUp: 3)
        #expect(onTime.charges.map(\.cycle) == [9, 10] && onTime.skipped == nil)
        let capped = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 2, maxCycles: 5, endAt: nil, now: now,
                                                catchUp: .all, maxCatchUp: 3)
        #expect(capped.charges.map(\.cycle) == [3, 4, 5] && capped.skipped == 2...2 && capped.status == .completed)
    }

    @Test("a start_at more than 24 hours in the past is refused with 422 naming start_at, by the API and by the parser the CLI shares")
    func pastStartRefused() async throws {
        let harness = try await SubscriptionHarness.make("life_past_start", emulator: false)
        defer { harness.stop() }
        try await harness.seedToken(.adyen, token: "tok-active")
        let api = SubscriptionAdminAPI(operations: harness.operations)
        let lastYear = await SubscriptionAdminCalls.call(api, "POST", "/v1/subscriptions",
                                                         body: SubscriptionAdminCalls.body(extra: #", "start_at": "2029-01-01T10:00:00Z""#))
        #expect(lastYear.status == 422 && lastYear.field == "start_at" && lastYear.code == "unprocessable", "\(lastYear.json)")
        #expect(try await harness.int("SELECT count(*) AS n FROM subscriptions") == 0)
        let yesterday = await SubscriptionAdminCalls.call(api, "POST", "/v1/subscriptions",
                                                          body: SubscriptionAdminCalls.body(extra: #", "start_at": "2029-12-31T12:00:00Z""#))
        #expect(yesterday.status == 201, "\(yesterday.json)")
        do {
            _ = try NewSubscription.parse(Array(SubscriptionAdminCalls.body(extra: #", "start_at": "2020-01-01T00:00:00Z""#).utf8), now: Date())
            Issue.record("a start_at years ago was accepted")
        } catch {
            #expect(error.code == .unprocessable && error.field == "start_at" && error.httpStatus == 422)
        }
    }

    @Test("a decline settled while the subscription is paused keeps its cycle: the merchant is told, the retry waits, and resume charges it")
    func declineSettledWhilePaused() async throws {
        let harness = try await SubscriptionHarness.make("life_paused_decline", clientTimeout: .seconds(2))
        defer { harness.stop() }
        harness.emulator.failCharges(.adyen, with: .status(503))
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        try await harness.runChargeJobs(harness.handler(), rounds: 1)
        let lost = try #require(try await harness.charges(id).first)
        #expect(lost.status == "unknown")

        _ = try await harness.operations.pause(id: id, by: OperatorAction(actor: "ops"))
        let operations = ChargeOperations(pool: harness.pool, queue: harness.queue, settings: harness.settings,
                                          now: { [clock = harness.clock] in clock.now })
        _ = try await operations.resolve(id: lost.id, as: .failed, providerPaymentID: nil,
                                         by: OperatorAction(actor: "ops", note: "not in the Customer Area"))
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:pending"])
        #expect(try await callbackTypes(harness, id) == ["subscription.charge_failed"])
        let body = try #require(try await harness.text("SELECT body AS v FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)]))
        #expect(body.contains(#""status":"paused""#) && body.contains(#""cycle":1,"attempt":1"#), "\(body)")

        // Paused: the retry's due time passes and nothing is sent.
        harness.clock.advance(by: 86_400 + 60)
        try await harness.runChargeJobs(harness.handler())
        #expect(harness.emulator.executed(.adyen).isEmpty)
        _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "ops"))
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:succeeded"])
    }

    @Test("a hard decline settled while the subscription is paused makes it past due and tells the merchant")
    func hardDeclineSettledWhilePaused() async throws {
        let harness = try await SubscriptionHarness.make("life_paused_hard", clientTimeout: .seconds(2))
        defer { harness.stop() }
        harness.emulator.script(.adyen, [.declined(code: ProviderID.adyen.hardDeclineCode)])
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        // The operator pauses while the charge is at the provider; its decline settles after.
        let operations = harness.operations
        let handler = harness.handler(afterProviderCall: { _ in _ = try await operations.pause(id: id, by: OperatorAction(actor: "ops")) })
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_hard"])
        #expect(try await harness.subscription(id).status == .pastDue)
        #expect(try await callbackTypes(harness, id) == ["subscription.charge_failed"])
    }

    @Test("resume names only skipped cycles that exist: none past max_cycles")
    func resumeReportsOnlyExistingCycles() async throws {
        let harness = try await SubscriptionHarness.make("life_resume_max", emulator: false)
        defer { harness.stop() }
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen), every: 1, unit: .day, maxCycles: 3)
        try await harness.scheduler().tick(now: harness.clock.now)
        _ = try await harness.operations.pause(id: id, by: OperatorAction(actor: "ops"))
        harness.clock.advance(by: 10 * 86_400 + 60)  // cycles 2 and 3 fall due while paused; 4 to 11 do not exist
        _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "ops"))
        #expect(try await callbackTypes(harness, id) == ["subscription.cycles_skipped"])
        let body = try await harness.text("SELECT body AS v FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)])
        #expect(body?.contains(#""first_cycle":2,"last_cycle":3,"count":2"#) == true, "\(body ?? "")")
    }
}
