import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// A charge whose answer was lost may have taken the money. These tests hold payhook to the
/// rule that it is settled from what is known (a stored webhook, the provider's lookup, an
/// operator) before anything is sent again, and that a key the provider may have forgotten
/// (its idempotency window passed) is never sent again, by a retry or by a replay.
@Suite("Charge reconciliation and idempotency windows", .timeLimit(.minutes(5)))
struct ChargeReconciliationTests {
    /// A charge whose provider call times out after the provider executed it: one round of
    /// the job, so it stays `unknown`. Returns the subscription and its charge.
    private func lostAnswer(_ harness: SubscriptionHarness, _ provider: ProviderID) async throws -> (subscription: Int64, charge: Charge) {
        harness.emulator.failCharges(provider, with: .timeout(after: .seconds(5)))
        let id = try await harness.subscribe(token: try await harness.seedToken(provider))
        try await harness.scheduler().tick(now: harness.clock.now)
        let outcomes = try await harness.runChargeJobs(harness.handler(), rounds: 1)
        #expect(outcomes.count == 1 && outcomes.allSatisfy { if case .retry = $0 { true } else { false } }, "\(outcomes)")
        let charge = try #require(try await harness.charges(id).first)
        #expect(charge.status == "unknown")
        #expect(harness.emulator.executed(provider).count == 1)
        return (id, charge)
    }

    private func openLetters(_ harness: SubscriptionHarness) async throws -> [DeadLetter] {
        try await DeadLetterOperations(pool: harness.pool).list(DeadLetterFilter(status: .open, source: .job))
    }

    @Test("after the idempotency window an unknown charge is never sent again: a charge_outcome_unknown dead letter, and replays (twice) only reconcile",
          arguments: [ProviderID.adyen, .mercadopago])
    func windowPassedNeverResends(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("rec_window_\(provider.rawValue)", clientTimeout: .seconds(2))
        defer { harness.stop() }
        let (id, charge) = try await lostAnswer(harness, provider)
        harness.clock.advance(by: 8 * 86_400)  // past every default window (Adyen 7 d)

        let outcomes = try await harness.runChargeJobs(harness.handler())
        guard case .discard(let reason, _)? = outcomes.first else {
            Issue.record("expected a dead letter, got \(outcomes)")
            return
        }
        #expect(reason == .chargeOutcomeUnknown, "\(outcomes)")
        #expect(harness.emulator.sent(provider, charge.idempotencyKey) == 1, "the key went out again after its window")
        #expect(try await harness.chargeSummary(id) == ["1/1:unknown"])
        #expect(harness.metrics.counterValue("payhook_charges_total", [("provider", provider.rawValue), ("outcome", "outcome_unknown")]) == 1)

        // The operator replays it, twice, days apart: each replay reconciles and sends nothing.
        for _ in 1...2 {
            let letter = try #require(try await openLetters(harness).first)
            #expect(letter.reason == "charge_outcome_unknown")
            _ = try await DeadLetterOperations(pool: harness.pool).replay(id: letter.id, by: OperatorAction(actor: "oncall", note: "try again"))
            harness.clock.advance(by: 2 * 86_400)
            let again = try await harness.runChargeJobs(harness.handler())
            #expect(again.count == 1 && again.allSatisfy { if case .discard(.chargeOutcomeUnknown, _) = $0 { true } else { false } },
                    "\(again)")
            #expect(harness.emulator.sent(provider, charge.idempotencyKey) == 1)
        }
        #expect(harness.emulator.executed(provider).count == 1)
    }

    @Test("PXP can be asked: after the window the lookup by merchantTransactionId settles the lost charge, nothing is sent again")
    func pxpLookupAfterWindow() async throws {
        let harness = try await SubscriptionHarness.make("rec_window_pxp", clientTimeout: .seconds(2))
        defer { harness.stop() }
        let (id, charge) = try await lostAnswer(harness, .pxp)
        harness.clock.advance(by: 2 * 86_400)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.sent(.pxp, charge.idempotencyKey) == 1)
        #expect(try await openLetters(harness).isEmpty)
    }

    @Test("a webhook stored for the charge's reference settles an unknown charge without another provider call, inside the window too",
          arguments: [ProviderID.adyen, .mercadopago])
    func storedWebhookSettles(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("rec_webhook_\(provider.rawValue)", clientTimeout: .seconds(2))
        defer { harness.stop() }
        let (id, charge) = try await lostAnswer(harness, provider)
        try await deliverWebhook(harness, provider, for: charge)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.sent(provider, charge.idempotencyKey) == 1, "sent again though the webhook had settled it")
        let settled = try #require(try await harness.charges(id).first)
        #expect(settled.providerPaymentID == harness.emulator.executed(provider).first?.providerPaymentID)
    }

    @Test("the provider's webhook arriving after the charge became a charge_outcome_unknown dead letter settles it and closes the letter",
          arguments: [ProviderID.adyen, .mercadopago])
    func lateWebhookClosesLetter(provider: ProviderID) async throws {
        let harness = try await SubscriptionHarness.make("rec_late_\(provider.rawValue)", clientTimeout: .seconds(2))
        defer { harness.stop() }
        let (id, charge) = try await lostAnswer(harness, provider)
        harness.clock.advance(by: 8 * 86_400)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await openLetters(harness).map(\.reason) == ["charge_outcome_unknown"])

        try await deliverWebhook(harness, provider, for: charge)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(try await openLetters(harness).isEmpty)
        let resolvedBy = try await harness.text("SELECT resolved_by AS v FROM dead_letters WHERE reason = 'charge_outcome_unknown'")
        #expect(resolvedBy == "payhook")
        #expect(harness.emulator.sent(provider, charge.idempotencyKey) == 1)
    }

    @Test("charges resolve: an operator settles an unknown charge as succeeded (with the provider's payment) or failed (the cycle continues under a new key); audited, letter resolved, a second resolve changes nothing")
    func operatorResolves() async throws {
        let harness = try await SubscriptionHarness.make("rec_resolve", clientTimeout: .seconds(2))
        defer { harness.stop() }
        let (first, charge) = try await lostAnswer(harness, .adyen)
        harness.clock.advance(by: 8 * 86_400)
        try await harness.runChargeJobs(harness.handler())
        let operations = ChargeOperations(pool: harness.pool, queue: harness.queue, settings: harness.settings, now: { [clock = harness.clock] in clock.now })
        let action = OperatorAction(actor: "alice", note: "Adyen Customer Area shows the payment authorised")

        await #expect(throws: OperationsError.self) {
            _ = try await operations.resolve(id: charge.id, as: .succeeded, providerPaymentID: nil, by: action)
        }
        await #expect(throws: OperationsError.self) {
            _ = try await operations.resolve(id: charge.id, as: .succeeded, providerPaymentID: "PSP1", by: OperatorAction(actor: "alice"))
        }
        let psp = try #require(harness.emulator.executed(.adyen).first?.providerPaymentID)
        let outcome = try await operations.resolve(id: charge.id, as: .succeeded, providerPaymentID: psp, by: action)
        #expect(outcome.changed && outcome.charge.status == "succeeded" && outcome.charge.paymentID != nil)
        #expect(try await openLetters(harness).isEmpty)
        #expect(try await harness.int("SELECT count(*) AS n FROM audit_log WHERE action = 'charge.resolve' AND actor = 'alice' AND target = $1",
                                      [.text("charge:\(charge.id)")]) == 1)
        let again = try await operations.resolve(id: charge.id, as: .failed, providerPaymentID: nil, by: action)
        #expect(!again.changed && again.charge.status == "succeeded")
        #expect(try await harness.int("SELECT count(*) AS n FROM audit_log WHERE action = 'charge.resolve'") == 1)

        // A second subscription's lost charge, found never executed: failed continues the cycle.
        harness.emulator.failCharges(.adyen, with: .status(503))
        let (second, lost) = try await lostAnswer503(harness)
        let failed = try await operations.resolve(id: lost.id, as: .failed, providerPaymentID: nil,
                                                  by: OperatorAction(actor: "bob", note: "not in the Customer Area"))
        #expect(failed.changed && failed.charge.status == "declined_soft")
        #expect(try await harness.chargeSummary(second) == ["1/1:declined_soft", "1/2:pending"])
        #expect(try await harness.chargeSummary(first) == ["1/1:succeeded"])
    }

    /// A charge sent once whose call failed with a 5xx (never executed), left `unknown`.
    private func lostAnswer503(_ harness: SubscriptionHarness) async throws -> (subscription: Int64, charge: Charge) {
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        try await harness.runChargeJobs(harness.handler(), rounds: 1)
        let charge = try #require(try await harness.charges(id).first)
        #expect(charge.status == "unknown")
        return (id, charge)
    }

    @Test("each provider's idempotency window is configurable with the dunning schedule's durations; a bad one names its variable")
    func windowsConfigurable() throws {
        let configuration = try Configuration.parse(environment: [
            "PAYHOOK_ADYEN_IDEMPOTENCY_WINDOW": "3d", "PAYHOOK_PXP_IDEMPOTENCY_WINDOW": "12h",
        ]) { _ in "" }
        #expect(configuration.subscriptions.idempotencyWindow("adyen") == .seconds(3 * 86_400))
        #expect(configuration.subscriptions.idempotencyWindow("pxp") == .seconds(12 * 3_600))
        #expect(configuration.subscriptions.idempotencyWindow("mercadopago") == .seconds(86_400))
        #expect(SubscriptionSettings().idempotencyWindow("adyen") == .seconds(7 * 86_400))
        do {
            _ = try Configuration.parse(environment: ["PAYHOOK_MERCADOPAGO_IDEMPOTENCY_WINDOW": "forever"]) { _ in "" }
            Issue.record("an invalid window was accepted")
        } catch {
            #expect(error.description.contains("PAYHOOK_MERCADOPAGO_IDEMPOTENCY_WINDOW"))
        }
    }

    @Test("a charge job whose lease is already lost sends nothing; the next run, holding the job, sends the same key once")
    func lostLeaseSendsNothing() async throws {
        let harness = try await SubscriptionHarness.make("rec_lease")
        defer { harness.stop() }
        let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
        try await harness.scheduler().tick(now: harness.clock.now)
        let job = try #require(try await harness.queue.claim(limit: 1, kinds: [ChargeRecurringHandler.kind], worker: "t",
                                                             lease: .seconds(60)).first)
        let lost = JobLease(expiresAt: .now + .seconds(60), margin: .seconds(1))
        lost.lose()
        let handler = harness.handler()
        let outcome = try await JobLease.$current.withValue(lost) { try await handler.run(job) }
        guard case .retry(let why) = outcome else {
            Issue.record("expected a retry, got \(outcome)")
            return
        }
        #expect(why.contains("lease"))
        #expect(harness.emulator.executed(.adyen).isEmpty)
        try await harness.queue.record(outcome, for: job)
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.sent(.adyen, try await harness.key(id, cycle: 1)) == 1)
    }

    @Test("keys carry the installation's namespace: two databases give subscription 1's first charge different keys, and migrating again keeps the namespace")
    func installationNamespace() async throws {
        var keys: [String] = []
        for label in ["rec_ns_one", "rec_ns_two"] {
            let harness = try await SubscriptionHarness.make(label, emulator: false)
            defer { harness.stop() }
            let id = try await harness.subscribe(token: try await harness.seedToken(.adyen))
            try await harness.scheduler().tick(now: harness.clock.now)
            let namespace = try await harness.namespace()
            #expect(namespace.range(of: "^ph[0-9a-f]{8}$", options: .regularExpression) != nil, "\(namespace)")
            let key = try #require(try await harness.charges(id).first?.idempotencyKey)
            #expect(RestoreSafeIDs.keyStem(key) == "\(namespace)-sub-\(id)-c1-a1")
            keys.append(RestoreSafeIDs.keyStem(key).replacingOccurrences(of: namespace, with: ""))
            keys.append(key)
            _ = try await PostgresMigrator(conninfo: harness.database.url, migrations: try SchemaMigrations.all()).migrate()
            #expect(try await harness.namespace() == namespace)
        }
        #expect(keys[0] == keys[2], "the same subscription id and cycle in both databases")
        #expect(keys[1] != keys[3])
    }

    /// Stores and processes the provider's webhook for `charge` as ingress and the processor
    /// would: Adyen's AUTHORISATION for the charge's reference, Mercado Pago's thin order
    /// notification completed from the emulator.
    private func deliverWebhook(_ harness: SubscriptionHarness, _ provider: ProviderID, for charge: Charge) async throws {
        let executed = try #require(harness.emulator.executed(provider).first)
        let body: String
        switch provider {
        case .adyen:
            body = Bodies.adyen(Bodies.adyenItem(psp: executed.providerPaymentID, code: "AUTHORISATION", value: charge.amountMinor,
                                                 currency: charge.currency, reference: try #require(charge.merchantReference)))
        case .mercadopago:
            body = Bodies.mercadoPago(type: "order", action: "order.processed", id: executed.providerPaymentID, notification: 7)
        case .pxp:
            Issue.record("not used for PXP")
            return
        }
        try await harness.pool.query(
            "INSERT INTO inbound_events (provider, dedup_key, body, next_attempt_at) VALUES ($1, $2, $3, now() - interval '1 second')",
            [.text(provider.rawValue), .text(UUID().uuidString), .bytea(Array(body.utf8))])
        var settings = ProcessorSettings()
        settings.pollInterval = .milliseconds(200)
        let processor = InboundEventProcessor(pool: harness.pool, conninfo: harness.database.url, clients: harness.clients,
                                              hooks: .fulfillment(FulfillmentSettings(), pool: harness.pool).then(.subscriptions),
                                              settings: settings, logger: .silent)
        let outcome = try await processor.processBatch()
        #expect(outcome.processed == 1, "\(outcome)")
    }
}

extension ProviderEmulator {
    /// Requests with this idempotency key the provider saw: executions and replays.
    func sent(_ provider: ProviderID, _ key: String) -> Int {
        switch provider {
        case .mercadopago: mercadoPago.executedCharges(idempotencyKey: key) + mercadoPago.replayedCharges(idempotencyKey: key)
        case .adyen: adyen.executedCharges(idempotencyKey: key) + adyen.replayedCharges(idempotencyKey: key)
        case .pxp: pxp.executedCharges(idempotencyKey: key) + pxp.replayedCharges(idempotencyKey: key)
        }
    }
}
