import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing

/// Fulfillment off the happy path: callbacks that failed and are replayed, payments whose facts
/// arrive in any order, reversals after `order.paid`, a refund racing the fulfillment job, and
/// merchant accounts that share references.
@Suite("Fulfillment edges: replays, reordering, reversals, accounts", .timeLimit(.minutes(5)))
struct FulfillmentEdgeTests {
    private func openLetter(_ harness: FulfillmentHarness, reason: String) async throws -> Int64 {
        try #require(try await harness.pool.query(
            "SELECT id FROM dead_letters WHERE status = 'open' AND reason = $1 ORDER BY id DESC LIMIT 1", [.text(reason)])
            .rows.first?.decode("id", as: Int64.self))
    }

    @Test("an order.paid callback dead-lettered by a 410 is delivered again on replay, with the same webhook-id and body, and fulfills the order")
    func goneThenReplayed() async throws {
        let harness = try await FulfillmentHarness.make("edge_gone_replay")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([410, 200])
        let order = try await harness.register(FulfillmentTests.registration("order-31"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP31", reference: "order-31", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "failed"))
        let letter = try await openLetter(harness, reason: "merchant_gone")

        let replay = try await DeadLetterOperations(pool: harness.pool).replay(id: letter, by: OperatorAction(actor: "oncall", note: "endpoint back"))
        #expect(replay.changed)
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        let received = harness.endpoint.received
        #expect(received.count == 2)
        #expect(Set(received.compactMap { $0.header("webhook-id") }).count == 1)
        #expect(Set(received.compactMap { $0.header("webhook-id").map(RestoreSafeIDs.factKey) }) == ["order.paid.\(order.id)"])
        #expect(received[0].body == received[1].body)
        #expect(try await harness.order(order.id).callbacks.map(\.status) == ["delivered"])

        // Replaying a delivered callback's job again sends nothing more.
        try await harness.pool.query("UPDATE jobs SET state = 'available', attempt = 0, run_at = now() WHERE kind = 'merchant_callback'")
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled", settle: true))
        #expect(harness.endpoint.received.count == 2)
    }

    @Test("an order.paid callback whose last attempt fails marks the order's fulfillment failed, and a replay later fulfills it")
    func lastAttemptFailsThenReplayed() async throws {
        let harness = try await FulfillmentHarness.make("edge_last_attempt")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([500, 503, 200])
        let order = try await harness.register(FulfillmentTests.registration("order-32"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP32", reference: "order-32", value: 1999),
                                  processor: harness.processor())
        // Fulfill first, so the callback job exists, then give it two attempts in all.
        let queue = harness.queue()
        let fulfill = FulfillOrderHandler(pool: harness.pool, queue: queue, settings: harness.settings, metrics: harness.metrics,
                                          logger: .silent)
        let jobs = try await queue.claim(limit: 10, kinds: [FulfillOrderHandler.kind], worker: "t", lease: .seconds(60))
        for job in jobs { try await queue.record(try await fulfill.run(job), for: job) }
        try await harness.pool.query("UPDATE jobs SET max_attempts = 2 WHERE kind = 'merchant_callback'")

        #expect(try await harness.runWorker(until: order.id, reaches: "failed"))
        let failed = try await harness.order(order.id)
        #expect(failed.callbacks.map(\.status) == ["failed"])
        #expect(failed.reviewReason?.contains("order.paid callback failed") == true, "\(failed.reviewReason ?? "")")
        let letter = try await openLetter(harness, reason: "max_attempts_exceeded")

        _ = try await DeadLetterOperations(pool: harness.pool).replay(id: letter, by: OperatorAction(actor: "oncall", note: "endpoint back"))
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        #expect(harness.endpoint.received.count == 3)
        #expect(try await harness.order(order.id).callbacks.map(\.status) == ["delivered"])
    }

    /// Runs every due fulfillment and callback job, as a worker would, until none is due.
    private func runDueJobs(_ harness: FulfillmentHarness, _ handlers: [AnyJobHandler], _ queue: JobQueue) async throws {
        let byKind = Dictionary(uniqueKeysWithValues: handlers.map { ($0.kind, $0) })
        for _ in 0..<20 {
            let jobs = try await queue.claim(limit: 50, kinds: Array(byKind.keys), worker: "t", lease: .seconds(60))
            if jobs.isEmpty { return }
            for job in jobs {
                let outcome: JobOutcome
                do { outcome = try await byKind[job.kind]!.run(job) } catch { outcome = .retry(error: "\(error)") }
                try await queue.record(outcome, for: job)
            }
        }
    }

    @Test("every order of Adyen's paid lifecycle (authorisation, capture, the capture again), with the fulfillment job running between deliveries, sends exactly one order.paid per order and sends none to review")
    func everyPermutation() async throws {
        let harness = try await FulfillmentHarness.make("edge_permutations")
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let queue = harness.queue()
        let handlers = try harness.handlers()
        var orders: [Int64] = []
        for (index, order) in permutations([0, 1, 2]).enumerated() {
            let reference = "perm-\(index)"
            let registered = try await harness.register(FulfillmentTests.registration(reference))
            let paid = FulfillmentHarness.adyenPaid(psp: "PSP-P\(index)", reference: reference, value: 1999)
            let events = [paid[0], paid[1], paid[1]]
            for position in order {
                try await harness.deliver([events[position]], processor: processor)
                try await runDueJobs(harness, handlers, queue)
            }
            orders.append(registered.id)
        }
        // Time passes: anything still waiting runs again.
        for _ in 0..<3 {
            try await harness.pool.query("UPDATE jobs SET run_at = now() WHERE state = 'retryable'")
            try await runDueJobs(harness, handlers, queue)
        }
        for id in orders {
            let order = try await harness.order(id)
            #expect(order.fulfillmentStatus == "fulfilled", "order \(id): \(order.fulfillmentStatus) \(order.reviewReason ?? "")")
        }
        let webhookIDs = harness.endpoint.received.compactMap { $0.header("webhook-id").map(RestoreSafeIDs.factKey) }
        #expect(webhookIDs.count == orders.count)
        #expect(Set(webhookIDs) == Set(orders.map { "order.paid.\($0)" }))
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters") == 0)
    }

    @Test("a capture whose amount never arrives waits, showing what for, and goes to review only after the configured wait, naming the missing fact")
    func missingFactBounded() async throws {
        let harness = try await FulfillmentHarness.make("edge_missing_fact")
        defer { harness.endpoint.stop() }
        let order = try await harness.register(FulfillmentTests.registration("order-33"))
        let capture = FulfillmentHarness.adyenPaid(psp: "PSP33", reference: "order-33", value: 1999)[1]
        try await harness.deliver([capture], processor: harness.processor())
        let queue = harness.queue()
        let handlers = try harness.handlers()
        for _ in 0..<5 {
            try await harness.pool.query("UPDATE jobs SET run_at = now() WHERE state = 'retryable'")
            try await runDueJobs(harness, handlers, queue)
        }
        let waiting = try await harness.order(order.id)
        #expect(waiting.fulfillmentStatus == "pending")
        #expect(waiting.waitingFor == "payment PSP33 has no reported amount yet")
        #expect(waiting.waitingSince != nil)
        // The configured wait (PAYHOOK_FULFILLMENT_REVIEW_AFTER_SECONDS, 1020 s by default) has passed.
        try await harness.pool.query("UPDATE orders SET waiting_since = now() - interval '1021 seconds' WHERE id = $1", [.int(order.id)])
        try await harness.pool.query("UPDATE jobs SET run_at = now() WHERE state = 'retryable'")
        try await runDueJobs(harness, handlers, queue)
        let reviewed = try await harness.order(order.id)
        #expect(reviewed.fulfillmentStatus == "needs_review")
        #expect(reviewed.reviewReason?.contains("has no reported amount yet, still after waiting 102") == true, "\(reviewed.reviewReason ?? "")")
        #expect(reviewed.waitingFor == nil)
        #expect(harness.endpoint.received.isEmpty)
    }

    @Test("an order in review is checked again when the missing fact arrives: the authorisation after review fulfills it and resolves its dead letter")
    func reviewRecheckedOnNewFact() async throws {
        var settings = FulfillmentSettings()
        settings.reviewAfter = .zero
        let harness = try await FulfillmentHarness.make("edge_review_new_fact", settings: settings)
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order = try await harness.register(FulfillmentTests.registration("order-40"))
        let paid = FulfillmentHarness.adyenPaid(psp: "PSP40", reference: "order-40", value: 1999)
        try await harness.deliver([paid[1]], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(order.id).fulfillmentStatus == "needs_review")
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters WHERE status = 'open'") == 1)

        try await harness.deliver([paid[0]], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        let fulfilled = try await harness.order(order.id)
        #expect(fulfilled.fulfillmentStatus == "fulfilled")
        #expect(fulfilled.reviewReason == nil)
        #expect(try await callbackTypes(harness, order.id) == ["order.paid"])
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters WHERE status = 'open'") == 0)
    }

    @Test("replaying a fulfillment_mismatch dead letter runs the check again instead of discarding it again; a mismatch that still holds goes back to review with its reason")
    func reviewRecheckedOnReplay() async throws {
        var settings = FulfillmentSettings()
        settings.reviewAfter = .zero
        let harness = try await FulfillmentHarness.make("edge_review_replay", settings: settings)
        defer { harness.endpoint.stop() }
        let order = try await harness.register(FulfillmentTests.registration("order-41"))
        let capture = FulfillmentHarness.adyenPaid(psp: "PSP41", reference: "order-41", value: 1999)[1]
        try await harness.deliver([capture], processor: harness.processor())
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(order.id).fulfillmentStatus == "needs_review")

        // The operator replays with a longer wait configured: the check runs and waits for the amount.
        var patient = settings
        patient.reviewAfter = .seconds(3600)
        let patientHandler = FulfillOrderHandler(pool: harness.pool, queue: harness.queue(), settings: patient,
                                                 metrics: harness.metrics, logger: .silent)
        let letter = try await openLetter(harness, reason: "fulfillment_mismatch")
        _ = try await DeadLetterOperations(pool: harness.pool).replay(id: letter, by: OperatorAction(actor: "oncall", note: "longer review wait configured"))
        try await runDueJobs(harness, [AnyJobHandler(patientHandler)], harness.queue())
        let waiting = try await harness.order(order.id)
        #expect(waiting.waitingFor == "payment PSP41 has no reported amount yet")
        #expect(try await harness.processing.text(
            "SELECT state AS v FROM jobs WHERE unique_key = 'fulfill_order:\(order.id)'") == "retryable")

        // Replayed with the short wait, the still-missing amount sends it back to review, with a new letter.
        try await harness.pool.query("UPDATE jobs SET run_at = now() WHERE state = 'retryable'")
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        let reviewed = try await harness.order(order.id)
        #expect(reviewed.fulfillmentStatus == "needs_review")
        #expect(reviewed.reviewReason?.hasPrefix("payment PSP41 has no reported amount yet, still after waiting") == true)
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters WHERE status = 'open'") == 1)
    }

    @Test("two accounts may register the same merchant reference; a payment links to and fulfills only the order of the account whose route delivered it")
    func accountsDoNotCross() async throws {
        let harness = try await FulfillmentHarness.make("edge_accounts")
        defer { harness.endpoint.stop() }
        let shopA = try await harness.register(FulfillmentTests.registration("1001", extra: #", "account": "shop-a""#))
        let shopB = try await harness.register(FulfillmentTests.registration("1001", extra: #", "account": "shop-b""#))
        #expect(shopA.id != shopB.id)
        for body in FulfillmentHarness.adyenPaid(psp: "PSP-B1001", reference: "1001", value: 1999) {
            try await harness.pool.query(
                "INSERT INTO inbound_events (provider, account, dedup_key, body, next_attempt_at) VALUES ('adyen', 'shop-b', $1, $2, $3)",
                [.text(UUID().uuidString), .bytea(Array(body.utf8)), .timestamptz(harness.processing.clock.now)])
        }
        // The same reference on the default route belongs to neither shop.
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP-D1001", reference: "1001", value: 1999),
                                  processor: harness.processor())
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(shopB.id).fulfillmentStatus == "fulfilled")
        #expect(try await harness.order(shopB.id).payments.map(\.providerPaymentID) == ["PSP-B1001"])
        let a = try await harness.order(shopA.id)
        #expect(a.fulfillmentStatus == "none" && a.payments.isEmpty)
        #expect(harness.endpoint.received.compactMap { $0.header("webhook-id").map(RestoreSafeIDs.factKey) } == ["order.paid.\(shopB.id)"])
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM payments WHERE provider_payment_id = 'PSP-D1001' AND order_id IS NULL") == 1)
    }

    private func callbackTypes(_ harness: FulfillmentHarness, _ order: Int64) async throws -> [String] {
        try await harness.order(order).callbacks.map(\.type)
    }

    @Test("a capture that fails after order.paid queues one order.payment_reversed (reason failed), however often it is delivered; a declined earlier attempt reports nothing")
    func captureFailedAfterPaid() async throws {
        let harness = try await FulfillmentHarness.make("edge_capture_failed")
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order = try await harness.register(FulfillmentTests.registration("order-34"))
        let declined = Bodies.adyen(Bodies.adyenItem(psp: "PSP34-0", code: "AUTHORISATION", success: false, value: 1999, reference: "order-34"))
        try await harness.deliver([declined] + FulfillmentHarness.adyenPaid(psp: "PSP34", reference: "order-34", value: 1999), processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(order.id).fulfillmentStatus == "fulfilled")

        let failed = Bodies.adyen(Bodies.adyenItem(psp: "CF-PSP34", original: "PSP34", code: "CAPTURE_FAILED", value: 1999, reference: "order-34"))
        try await harness.deliver([failed, failed], processor: processor)
        try await harness.deliver([declined], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await callbackTypes(harness, order.id) == ["order.paid", "order.payment_reversed"])
        let reversed = try #require(harness.endpoint.received.first { $0.header("webhook-id")?.hasPrefix("order.payment_reversed.") == true })
        #expect(String(decoding: reversed.body, as: UTF8.self).contains(#""reason":"failed""#))
    }

    @Test("with PAYHOOK_FULFILL_ON_AUTHORIZED, a cancelled authorisation after order.paid queues one order.payment_reversed (reason canceled)")
    func cancellationAfterAuthorizedPaid() async throws {
        var settings = FulfillmentSettings()
        settings.fulfillOnAuthorized = true
        let harness = try await FulfillmentHarness.make("edge_cancel_authorized", settings: settings)
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order = try await harness.register(FulfillmentTests.registration("order-35"))
        try await harness.deliver([FulfillmentHarness.adyenPaid(psp: "PSP35", reference: "order-35", value: 1999)[0]], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(order.id).fulfillmentStatus == "fulfilled")
        let cancel = Bodies.adyen(Bodies.adyenItem(psp: "CN-PSP35", original: "PSP35", code: "CANCELLATION", value: 1999, reference: "order-35"))
        try await harness.deliver([cancel, cancel], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await callbackTypes(harness, order.id) == ["order.paid", "order.payment_reversed"])
        #expect(try await harness.processing.text(
            "SELECT body AS v FROM merchant_callbacks WHERE type = 'order.payment_reversed'")?.contains(#""reason":"canceled""#) == true)
    }

    @Test("with PAYHOOK_FULFILL_ON_AUTHORIZED, a capture below the authorised amount after order.paid queues one order.payment_reversed (reason partial_capture) naming the shortfall")
    func partialCaptureAfterAuthorizedPaid() async throws {
        var settings = FulfillmentSettings()
        settings.fulfillOnAuthorized = true
        let harness = try await FulfillmentHarness.make("edge_partial_capture_authorized", settings: settings)
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order = try await harness.register(FulfillmentTests.registration("order-37"))
        try await harness.deliver([FulfillmentHarness.adyenPaid(psp: "PSP37", reference: "order-37", value: 1999)[0]], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(order.id).fulfillmentStatus == "fulfilled")
        let capture = Bodies.adyen(Bodies.adyenItem(psp: "CAP-PSP37", original: "PSP37", code: "CAPTURE", value: 800, reference: "order-37"))
        try await harness.deliver([capture, capture], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await callbackTypes(harness, order.id) == ["order.paid", "order.payment_reversed"])
        let body = try #require(try await harness.processing.text(
            "SELECT body AS v FROM merchant_callbacks WHERE type = 'order.payment_reversed'"))
        #expect(body.contains(#""reason":"partial_capture""#))
        #expect(body.contains(#""shortfall":{"value":1199,"currency":"EUR"}"#))
    }

    @Test("a capture of the full authorised amount after order.paid on authorisation reports nothing")
    func fullCaptureAfterAuthorizedPaid() async throws {
        var settings = FulfillmentSettings()
        settings.fulfillOnAuthorized = true
        let harness = try await FulfillmentHarness.make("edge_full_capture_authorized", settings: settings)
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order = try await harness.register(FulfillmentTests.registration("order-38"))
        try await harness.deliver([FulfillmentHarness.adyenPaid(psp: "PSP38", reference: "order-38", value: 1999)[0]], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        try await harness.deliver([FulfillmentHarness.adyenPaid(psp: "PSP38", reference: "order-38", value: 1999)[1]], processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await callbackTypes(harness, order.id) == ["order.paid"])
    }

    @Test("a second payment captured on an order already reported paid queues one order.overpaid, gives the order a review reason the console shows, and counts in payhook_overpayments_total")
    func secondPaymentAfterPaid() async throws {
        let harness = try await FulfillmentHarness.make("edge_second_payment")
        defer { harness.endpoint.stop() }
        let metrics = MetricsRegistry()
        var processorSettings = ProcessorSettings()
        processorSettings.pollInterval = .milliseconds(200)
        let processor = InboundEventProcessor(
            pool: harness.pool, conninfo: harness.processing.database.url, clients: PaymentProviderClients([harness.processing.mercadoPago, harness.processing.pxp]),
            hooks: .fulfillment(harness.settings, pool: harness.pool).then(.subscriptions),
            settings: processorSettings, logger: .silent, metrics: metrics)
        let order = try await harness.register(FulfillmentTests.registration("order-39"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP39", reference: "order-39", value: 1999), processor: processor)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await harness.order(order.id).fulfillmentStatus == "fulfilled")

        let second = FulfillmentHarness.adyenPaid(psp: "PSP39-B", reference: "order-39", value: 1999)
        for body in second + second { try await harness.processing.insert(.adyen, body) }
        let outcome = try await harness.processing.drain(processor)
        #expect(outcome.overpayments == 1)
        try await runDueJobs(harness, try harness.handlers(), harness.queue())
        #expect(try await callbackTypes(harness, order.id) == ["order.paid", "order.overpaid"])
        let reviewed = try await harness.order(order.id)
        #expect(reviewed.fulfillmentStatus == "fulfilled")
        #expect(reviewed.reviewReason?.hasPrefix("overpaid: payment PSP39-B paid 1999 EUR minor units") == true)
        let body = try #require(harness.endpoint.received.first { $0.header("webhook-id")?.hasPrefix("order.overpaid.") == true }?.body)
        #expect(String(decoding: body, as: UTF8.self).contains(#""provider_payment_id":"PSP39-B""#))
        #expect(metrics.renderPrometheus().contains("payhook_overpayments_total 1\n"))
    }

    @Test("a refund committed while the fulfillment transaction is open waits for it, then sees order.paid and queues order.refunded")
    func refundRacingFulfillment() async throws {
        let harness = try await FulfillmentHarness.make("edge_refund_race")
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order = try await harness.register(FulfillmentTests.registration("order-36"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP36", reference: "order-36", value: 1999), processor: processor)

        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        let queue = harness.queue()
        var handler = FulfillOrderHandler(pool: harness.pool, queue: queue, settings: harness.settings, metrics: harness.metrics,
                                          logger: .silent)
        handler.beforeCommit = { _ in
            enteredContinuation.yield()
            for await _ in release { break }
        }
        let job = try #require(try await queue.claim(limit: 1, kinds: [FulfillOrderHandler.kind], worker: "t", lease: .seconds(60)).first)
        let fulfilling = Task { [handler] in try await handler.run(job) }
        for await _ in entered { break }

        let refund = Bodies.adyen(Bodies.adyenItem(psp: "RF-PSP36", original: "PSP36", code: "REFUND", value: 1999, reference: "order-36"))
        try await harness.processing.insert(.adyen, refund)
        let finished = Mutex(false)
        let processing = Task {
            defer { finished.withLock { $0 = true } }
            return try await processor.processBatch()
        }
        // The batch waits for the fulfillment's advisory locks, or commits past it (which must
        // not lose order.refunded either).
        let waited = await eventually(timeout: .seconds(10)) {
            let waiting = (try? await harness.processing.scalar(
                "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")) ?? 0
            return waiting > 0 || finished.withLock { $0 }
        }
        #expect(waited && !finished.withLock { $0 }, "the refund batch did not wait for the fulfillment's lock")
        releaseContinuation.finish()
        try await queue.record(try await fulfilling.value, for: job)
        #expect(try await processing.value.processed == 1)
        #expect(try await callbackTypes(harness, order.id) == ["order.paid", "order.refunded"])
    }
}

