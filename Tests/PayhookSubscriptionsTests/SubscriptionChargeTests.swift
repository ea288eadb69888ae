import Foundation
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// Recurring charges end to end for each provider: scheduler, `charge_recurring` jobs, the real
/// HTTP clients and the provider emulator (which enforces idempotency keys and counts the
/// charges it actually executed), against a real PostgreSQL.
@Suite("Subscription charges through the provider emulator", .timeLimit(.minutes(5)))
struct SubscriptionChargeTests {
    static let providers = ProviderID.allCases

    @Test("a subscription is charged on schedule for several cycles; each success records and links the provider's payment",
          arguments: providers)
    func severalCycles(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("sub_cycles_\(provider.rawValue)")
        defer { harness.stop() }
        let ns = try await harness.namespace()
        let token = try await harness.seedToken(provider)
        let id = try await harness.subscribe(token: token, amount: 2500, currency: "BRL", every: 1, unit: .month)
        let scheduler = harness.scheduler()
        let handler = harness.handler()
        for _ in 1...3 {
            #expect(try await scheduler.tick(now: harness.clock.now) == 1)
            try await harness.runChargeJobs(handler)
            harness.clock.advance(by: 31 * 86_400)
        }
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded", "2/1:succeeded", "3/1:succeeded"])
        let executed = harness.emulator.executedByAttempt(provider)
        #expect(executed == Dictionary(uniqueKeysWithValues: (1...3).map { ("\(ns)-sub-\(id)-c\($0)-a1", 1) }))
        let charges = try await harness.charges(id)
        #expect(charges.allSatisfy { $0.providerPaymentID != nil && $0.settledAt != nil && $0.calls == 1 })
        if provider == .mercadopago {
            #expect(charges.allSatisfy { $0.orderID != nil })
            #expect(try await harness.int("SELECT count(*) AS n FROM orders o JOIN charges c ON c.order_id = o.id AND c.provider_payment_id = o.provider_order_id") == 3)
        } else {
            #expect(charges.allSatisfy { $0.paymentID != nil })
            #expect(try await harness.int("""
                SELECT count(*) AS n FROM payments p JOIN charges c ON c.payment_id = p.id
                WHERE p.provider_payment_id = c.provider_payment_id AND p.amount_minor = 2500 AND p.currency = 'BRL'
                """) == 3)
        }
        #expect(harness.metrics.counterValue("payhook_charges_total", [("provider", provider.rawValue), ("outcome", "succeeded")]) == 3)
        // The second cycle's request named the first cycle's payment as the previous transaction.
        #expect(try await harness.text("SELECT previous_transaction_reference AS v FROM charges WHERE cycle = 2")
                == charges.first?.providerPaymentID)
    }

    @Test("a soft decline is retried after the dunning wait under a new key, as a resubmission, and then succeeds",
          arguments: providers)
    func softDeclineThenSuccess(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("sub_soft_\(provider.rawValue)")
        defer { harness.stop() }
        let ns = try await harness.namespace()
        harness.emulator.script(provider, [.declined(code: provider.softDeclineCode), .approved])
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)
        let handler = harness.handler()
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:pending"])
        let retry = try #require(try await harness.charges(id).last)
        #expect(retry.reason == "resubmission" && retry.attemptedAt == nil)
        #expect(retry.scheduledAt == harness.clock.now.addingTimeInterval(86_400))

        // Not due yet on the test clock: nothing runs.
        harness.clock.advance(by: 86_400 - 60)
        try await harness.runChargeJobs(handler)
        #expect(harness.emulator.executed(provider).count == 1)
        harness.clock.advance(by: 60)
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:succeeded"])
        #expect(harness.emulator.executedByAttempt(provider) == ["\(ns)-sub-\(id)-c1-a1": 1, "\(ns)-sub-\(id)-c1-a2": 1])
        #expect(try await harness.subscription(id).status == .active)
        let first = try #require(try await harness.charges(id).first)
        #expect(first.declineCode?.hasPrefix(provider.softDeclineCode) == true)
    }

    @Test("when the dunning schedule is exhausted the subscription becomes past_due and the merchant is told once")
    func dunningExhausted() async throws {
        var harness = try await SubscriptionHarness.make("sub_dunning_out")
        defer { harness.stop() }
        harness.settings.dunningSchedule = [.seconds(3600)]
        let provider = ProviderID.adyen
        harness.emulator.setDefaultChargeResultFor(provider, .declined(code: provider.softDeclineCode))
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)
        let handler = harness.handler()
        try await harness.runChargeJobs(handler)
        harness.clock.advance(by: 3600)
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:declined_soft"])
        let subscription = try await harness.subscription(id)
        #expect(subscription.status == .pastDue)
        #expect(subscription.statusReason?.contains("dunning exhausted") == true)
        #expect(try await harness.text("SELECT string_agg(type || '@' || fact_key, ',') AS v FROM merchant_callbacks")
                == "subscription.past_due@subscription.past_due:\(id):c1")
        #expect(try await harness.int("SELECT count(*) AS n FROM jobs WHERE kind = 'merchant_callback'") == 1)
        // Past due: the next cycle is not scheduled.
        harness.clock.advance(by: 40 * 86_400)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 0)
    }

    @Test("a hard decline stops at once: no retry, past_due, and a subscription.charge_failed callback", arguments: providers)
    func hardDeclineStops(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("sub_hard_\(provider.rawValue)")
        defer { harness.stop() }
        harness.emulator.script(provider, [.declined(code: provider.hardDeclineCode)])
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)
        let handler = harness.handler()
        try await harness.runChargeJobs(handler)
        harness.clock.advance(by: 10 * 86_400)
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_hard"])
        #expect(try await harness.subscription(id).status == .pastDue)
        #expect(try await harness.text("SELECT type AS v FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)])
                == "subscription.charge_failed")
        #expect(harness.emulator.executed(provider).count == 1)
        harness.clock.advance(by: 40 * 86_400)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 0)
    }

    @Test("a timeout after the provider executed the charge is retried with the same key: exactly one charge at the provider",
          arguments: providers)
    func timeoutAfterExecuting(provider: ProviderID) async throws {
        // The client's deadline is generous for a loaded machine; the emulated stall is longer still.
        let harness = try await SubscriptionHarness.make("sub_timeout_\(provider.rawValue)", clientTimeout: .seconds(3))
        defer { harness.stop() }
        let ns = try await harness.namespace()
        harness.emulator.failCharges(provider, with: .timeout(after: .seconds(8)))
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)
        let outcomes = try await harness.runChargeJobs(harness.handler())
        #expect(outcomes.first.map { if case .retry = $0 { true } else { false } } == true, "\(outcomes)")
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.executedByAttempt(provider) == ["\(ns)-sub-\(id)-c1-a1": 1])
        let charge = try #require(try await harness.charges(id).first)
        #expect(charge.calls >= 2)
        #expect(harness.metrics.counterValue("payhook_charges_total", [("provider", provider.rawValue), ("outcome", "unknown")]) >= 1)
        let errors = try await harness.text("SELECT errors::text AS v FROM jobs WHERE unique_key = $1", [.text(charge.idempotencyKey)])
        #expect(errors?.contains("same idempotency key") == true, "\(errors ?? "")")
    }

    @Test("a 5xx is an unknown outcome too: retried with the same key, never a new one", arguments: providers)
    func unavailableRetriesSameKey(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("sub_503_\(provider.rawValue)")
        defer { harness.stop() }
        let ns = try await harness.namespace()
        harness.emulator.failCharges(provider, next: 2, with: .status(503))
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.int("SELECT count(*) AS n FROM charges") == 1)
        if provider == .pxp {
            // PXP documents no "no such transaction" answer, so the lookup after the 5xx cannot
            // show that nothing was charged: the charge stays unknown and is never re-sent on a
            // guess (its webhook or an operator settles it).
            #expect(try await harness.chargeSummary(id) == ["1/1:unknown"])
            #expect(harness.emulator.pxp.callCount(.createTransaction) == 1)
            #expect(harness.emulator.executedByKey(provider).isEmpty)
            return
        }
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.executedByAttempt(provider) == ["\(ns)-sub-\(id)-c1-a1": 1])
    }

    @Test("a worker killed between the provider call and the database update: the rescued job settles the charge with one charge at the provider",
          arguments: providers)
    func killedAfterProviderCall(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("sub_kill_\(provider.rawValue)")
        defer { harness.stop() }
        let ns = try await harness.namespace()
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)

        // The doomed worker: claims, calls the provider, and dies before writing anything.
        struct Killed: Error {}
        let doomed = harness.handler(afterProviderCall: { _ in throw Killed() })
        let jobs = try await harness.queue.claim(limit: 1, kinds: [ChargeRecurringHandler.kind], worker: "doomed", lease: .seconds(300))
        let job = try #require(jobs.first)
        await #expect(throws: Killed.self) { _ = try await doomed.run(job) }
        #expect(harness.emulator.executed(provider).count == 1)
        #expect(try await harness.chargeSummary(id) == ["1/1:pending"])
        // Its lease runs out; the rescuer hands the job back.
        try await harness.pool.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [.int(job.id)])
        #expect(try await JobRescuer(queue: harness.queue).rescueExpired() == 1)

        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.executedByAttempt(provider) == ["\(ns)-sub-\(id)-c1-a1": 1])
        #expect(try await harness.text("SELECT state AS v FROM jobs WHERE id = $1", [.int(job.id)]) == "succeeded")
    }

    @Test("a charge already settled is never sent again: a replayed job finishes without calling the provider")
    func replayOfSettledCharge() async throws {
        let harness = try await SubscriptionHarness.make("sub_replay")
        defer { harness.stop() }
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        let calls = harness.emulator.adyen.callCount()
        // As `dead-letters replay` would put it back.
        try await harness.pool.query("UPDATE jobs SET state = 'available', attempt = 0, run_at = now(), finalized_at = NULL WHERE kind = 'charge_recurring'")
        let outcomes = try await harness.runChargeJobs(harness.handler())
        #expect(outcomes == [.succeeded])
        #expect(harness.emulator.adyen.callCount() == calls)
        #expect(harness.emulator.executed(.adyen).count == 1)
    }

    @Test("a pending answer snoozes the job and the charge settles from the webhook's payment, without a second charge")
    func pendingSettlesFromWebhook() async throws {
        let harness = try await SubscriptionHarness.make("sub_pending")
        defer { harness.stop() }
        harness.emulator.script(.adyen, [.pending])
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        let handler = harness.handler()
        let first = try await harness.runChargeJobs(handler, rounds: 1)
        #expect(first == [.snooze(harness.settings.pendingRecheck)])
        let charge = try #require(try await harness.charges(id).first)
        #expect(charge.status == "pending")
        let psp = try #require(charge.providerPaymentID)
        // The AUTHORISATION webhook arrives and the processor stores the payment.
        try await harness.pool.query("INSERT INTO payments (provider, provider_payment_id, status) VALUES ('adyen', $1, 'authorized')", [.text(psp)])
        harness.clock.advance(by: 900)
        try await harness.runChargeJobs(handler)
        let settled = try #require(try await harness.charges(id).first)
        #expect(settled.status == "succeeded" && settled.paymentID != nil)
        #expect(harness.emulator.executed(.adyen).count == 1)
        #expect(try await harness.int("SELECT count(*) AS n FROM payments") == 1)
    }

    @Test("two schedulers and two job workers racing charge every cycle of every subscription exactly once at the provider")
    func racingSchedulersAndWorkers() async throws {
        let harness = try await SubscriptionHarness.make("sub_race_all")
        defer { harness.stop() }
        let perProvider = 12
        var ids: [Int64] = []
        for provider in Self.providers {
            let token = try await harness.seedToken(provider)
            for index in 0..<perProvider {
                ids.append(try await harness.subscribe(token: token, every: 1, unit: .day, reference: "\(provider.rawValue)-\(index)"))
            }
        }
        let cycles = 3
        let workers = try (0..<2).map { index in
            try JobWorker(queue: harness.queue, handlers: [AnyJobHandler(harness.handler())],
                          configuration: .init(name: "race-worker-\(index)", concurrency: 8, lease: .seconds(120),
                                               pollInterval: .milliseconds(100), listenConninfo: harness.database.url,
                                               rescueInterval: nil),
                          logger: .silent)
        }
        let running = workers.map { worker in Task { await worker.run() } }
        let schedulers = [harness.scheduler(batchSize: 5), harness.scheduler(batchSize: 9)]
        var created = 0
        for _ in 0..<cycles {
            let now = harness.clock.now
            async let a = schedulers[0].tick(now: now)
            async let b = schedulers[1].tick(now: now)
            created += try await a + b
            harness.clock.advance(by: 86_400)
        }
        let expected = ids.count * cycles
        let settled = await eventually(timeout: .seconds(180)) {
            (try? await harness.int("SELECT count(*) AS n FROM charges WHERE status = 'succeeded'")) == Int64(expected)
        }
        for worker in workers { worker.shutdown(gracePeriod: .seconds(10)) }
        for task in running { await task.value }
        #expect(settled)
        #expect(created == expected)
        #expect(harness.emulator.totalExecutedCharges == expected)
        for provider in Self.providers {
            let byKey = harness.emulator.executedByKey(provider)
            #expect(byKey.count == perProvider * cycles && byKey.values.allSatisfy { $0 == 1 }, "\(provider): \(byKey)")
        }
        #expect(try await harness.int("SELECT count(*) AS n FROM charges") == Int64(expected))
    }

    @Test("a token disabled mid-life pauses its active subscriptions and tells the merchant; an updated token keeps them running")
    func tokenDisabledPauses() async throws {
        let harness = try await SubscriptionHarness.make("sub_token")
        defer { harness.stop() }
        let tokenValue = "8415718415718415"
        let token = try await harness.seedToken(.adyen, token: tokenValue)
        let id = try await harness.subscribe(token: token)
        let other = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        // Cycle 1 is scheduled but its job has not run yet when the token goes away.
        try await harness.scheduler().tick(now: harness.clock.now)
        let processor = InboundEventProcessor(
            pool: harness.pool, conninfo: harness.database.url, clients: PaymentProviderClients([]),
            hooks: .fulfillment(FulfillmentSettings(), pool: harness.pool).then(.subscriptions), settings: ProcessorSettings(),
            logger: .silent)
        func deliver(_ type: String, _ event: String, _ createdAt: String) async throws {
            try await harness.pool.query("INSERT INTO inbound_events (provider, dedup_key, body) VALUES ('adyen', $1, $2)", [
                .text(event), .bytea(Array(Bodies.adyenToken(type: type, token: tokenValue, eventID: event, createdAt: createdAt).utf8)),
            ])
            while try await processor.processBatch().claimed > 0 {}
        }
        try await deliver("recurring.token.updated", "evt-1", "2030-01-01T09:00:00+01:00")
        #expect(try await harness.subscription(id).status == .active)

        try await deliver("recurring.token.disabled", "evt-2", "2030-01-01T10:00:00+01:00")
        let paused = try await harness.subscription(id)
        #expect(paused.status == .paused)
        #expect(paused.statusReason == "vault token \(token) disabled")
        #expect(try await harness.subscription(other).status == .active)
        #expect(try await harness.text("SELECT string_agg(type, ',') AS v FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)])
                == "subscription.paused")
        // The same event again (a replay) pauses and reports nothing twice.
        try await harness.pool.query("UPDATE inbound_events SET status = 'pending', attempts = 0, next_attempt_at = now()")
        while try await processor.processBatch().claimed > 0 {}
        #expect(try await harness.int("SELECT count(*) AS n FROM merchant_callbacks") == 1)

        // The attempt scheduled before the pause waits, unsent: the cycle fell due while active.
        try await harness.runChargeJobs(harness.handler(), rounds: 3)
        #expect(try await harness.chargeSummary(id) == ["1/1:pending"])
        #expect(harness.emulator.executed(.adyen).allSatisfy { !$0.idempotencyKey!.contains("-sub-\(id)-") })
        harness.clock.advance(by: 40 * 86_400)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)  // only the other subscription
        // Resuming on a disabled token is refused, naming the token.
        await #expect(throws: OperationsError.self) { _ = try await harness.operations.resume(id: id, by: OperatorAction(actor: "t")) }
    }
}

extension ProviderEmulator {
    func setDefaultChargeResultFor(_ provider: ProviderID, _ result: EmulatedChargeResult) {
        switch provider {
        case .mercadopago: mercadoPago.setDefaultChargeResult(result)
        case .adyen: adyen.setDefaultChargeResult(result)
        case .pxp: pxp.setDefaultChargeResult(result)
        }
    }
}
