import Foundation
import PayhookCore
import PayhookPostgres
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing

@Suite("Fulfillment of paid orders", .timeLimit(.minutes(5)))
struct FulfillmentTests {
    static func registration(_ reference: String, value: Int64 = 1999, currency: String = "EUR",
                             provider: String = "adyen", extra: String = "") -> String {
        FulfillmentHarness.registration(reference, value: value, currency: currency, provider: provider, extra: extra)
    }

    @Test("duplicated and reordered webhooks with two workers produce exactly one order.paid callback")
    func exactlyOneCallback() async throws {
        let harness = try await FulfillmentHarness.make("fulfill_once")
        defer { harness.endpoint.stop() }
        let order = try await harness.register(Self.registration("order-42"))
        let paid = FulfillmentHarness.adyenPaid(psp: "PSP42", reference: "order-42", value: 1999)
        // Capture first, then the authorisation, each delivered twice.
        let processor = harness.processor()
        try await harness.deliver([paid[1], paid[1], paid[0], paid[0]], processor: processor)
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM jobs WHERE kind = 'fulfill_order'") == 1)

        let otherPool = PostgresPool(conninfo: harness.processing.database.url, maxConnections: 4)
        let (first, firstTask) = try harness.startWorker(name: "w1")
        let (second, secondTask) = try harness.startWorker(name: "w2", pool: otherPool)
        let fulfilled = await eventually(timeout: .seconds(60)) {
            (try? await harness.order(order.id).fulfillmentStatus) == "fulfilled"
        }
        // More deliveries of the same facts after fulfillment change nothing.
        try await harness.deliver(paid, processor: processor)
        #expect(await harness.quietQueue())
        first.shutdown(gracePeriod: .seconds(5))
        second.shutdown(gracePeriod: .seconds(5))
        await firstTask.value
        await secondTask.value
        await otherPool.close()

        #expect(fulfilled)
        let received = harness.endpoint.received
        #expect(received.count == 1)
        #expect(received.first?.header("webhook-id").map(RestoreSafeIDs.factKey) == "order.paid.\(order.id)")
        let body = try #require(received.first.map { String(decoding: $0.body, as: UTF8.self) })
        #expect(body.contains("\"type\":\"order.paid\""))
        #expect(body.contains("\"merchant_reference\":\"order-42\""))
        #expect(body.contains("\"amount\":{\"value\":1999,\"currency\":\"EUR\"}"))
        let stored = try await harness.order(order.id)
        #expect(stored.callbacks.map(\.status) == ["delivered"])
        #expect(stored.payments.map(\.status) == ["captured"])
    }

    @Test("amount, currency and reference mismatches mark the order needs_review, dead-letter the job and send nothing",
          arguments: ["amount", "currency", "reference"])
    func mismatchNeedsReview(kind: String) async throws {
        let harness = try await FulfillmentHarness.make("fulfill_mismatch_\(kind)")
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        let order: OrderRecord
        switch kind {
        case "amount":
            order = try await harness.register(Self.registration("order-7"))
            try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP7", reference: "order-7", value: 1500), processor: processor)
        case "currency":
            order = try await harness.register(Self.registration("order-7"))
            try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP7", reference: "order-7", value: 1999, currency: "USD"),
                                      processor: processor)
        default:
            // Mercado Pago links payments by the provider's order id; the payment carries the
            // provider's external_reference, which differs from the registered one.
            order = try await harness.register("""
                {"provider": "mercadopago", "merchant_reference": "order-7", "provider_order_id": "ORD7",
                 "amount": {"value": 10000, "currency": "BRL"}}
                """)
            harness.processing.mercadoPago.setOrder(NormalizationMercadoPagoTests.order("ORD7", .captured, providerStatus: "processed", at: 1))
            try await harness.processing.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORD7", notification: 1))
            try await harness.processing.drain(processor)
        }
        let (worker, task) = try harness.startWorker(name: "w")
        let reviewed = await eventually(timeout: .seconds(60)) {
            (try? await harness.order(order.id).fulfillmentStatus) == "needs_review"
        }
        let dead = await eventually(timeout: .seconds(30)) {
            (try? await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters WHERE source = 'job' AND reason LIKE 'fulfillment_mismatch%'")) == 1
        }
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value
        #expect(reviewed)
        #expect(dead)
        let stored = try await harness.order(order.id)
        #expect(stored.reviewReason?.contains(kind == "reference" ? "merchant reference" : kind) == true, "\(stored.reviewReason ?? "nil")")
        #expect(harness.endpoint.received.isEmpty)
        #expect(harness.metrics.counterValue("payhook_fulfillments_total", [("outcome", "needs_review")]) == 1)
    }

    @Test("a merchant endpoint failing then recovering gets the same webhook-id and body on every attempt")
    func failingThenRecovering() async throws {
        let harness = try await FulfillmentHarness.make("fulfill_retry")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([503, 500])
        let order = try await harness.register(Self.registration("order-9"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP9", reference: "order-9", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        let received = harness.endpoint.received
        #expect(received.count == 3)
        #expect(Set(received.compactMap { $0.header("webhook-id") }).count == 1)
        #expect(Set(received.compactMap { $0.header("webhook-id").map(RestoreSafeIDs.factKey) }) == ["order.paid.\(order.id)"])
        #expect(Set(received.map(\.body)).count == 1)
        let callback = try #require(try await harness.order(order.id).callbacks.first)
        #expect(callback.attempts == 3)
        #expect(callback.lastStatusCode == 200)
    }

    @Test("a 410 from the merchant stops retrying: one request, the order fails fulfillment, a dead letter says why")
    func goneStops() async throws {
        let harness = try await FulfillmentHarness.make("fulfill_gone")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([410])
        let order = try await harness.register(Self.registration("order-10"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP10", reference: "order-10", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "failed", settle: true))
        #expect(harness.endpoint.received.count == 1)
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters WHERE reason LIKE 'merchant_gone%'") == 1)
        #expect(try await harness.order(order.id).callbacks.map(\.status) == ["gone"])
    }

    @Test("a payment captured before the order was registered is fulfilled when the registration arrives")
    func paymentBeforeRegistration() async throws {
        let harness = try await FulfillmentHarness.make("fulfill_late_registration")
        defer { harness.endpoint.stop() }
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP11", reference: "order-11", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM jobs") == 0)
        let order = try await harness.register(Self.registration("order-11"))
        #expect(order.payments.map(\.providerPaymentID) == ["PSP11"])
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM jobs WHERE kind = 'fulfill_order'") == 1)
        // Registering the same order again is idempotent.
        let again = try await harness.register(Self.registration("order-11"))
        #expect(again.id == order.id)
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM jobs WHERE kind = 'fulfill_order'") == 1)
        // The job gauge of /metrics sees it waiting.
        let gauges = OperationalGauges(pool: harness.pool, metrics: harness.metrics, logger: .silent)
        try await gauges.refresh()
        #expect(harness.metrics.renderPrometheus().contains(#"payhook_jobs{kind="fulfill_order",state="available"} 1"#))
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        #expect(harness.endpoint.received.count == 1)
    }

    @Test("a refund and a chargeback after fulfillment each send one callback, even when delivered twice")
    func reversalsAfterFulfillment() async throws {
        let harness = try await FulfillmentHarness.make("fulfill_reversals")
        defer { harness.endpoint.stop() }
        let order = try await harness.register(Self.registration("order-12"))
        let processor = harness.processor()
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP12", reference: "order-12", value: 1999), processor: processor)
        let (worker, task) = try harness.startWorker(name: "w")
        let fulfilled = await eventually(timeout: .seconds(60)) {
            (try? await harness.order(order.id).fulfillmentStatus) == "fulfilled"
        }
        let refund = Bodies.adyen(Bodies.adyenItem(psp: "RF-PSP12", original: "PSP12", code: "REFUND", value: 500, reference: "order-12"))
        let chargeback = Bodies.adyen(Bodies.adyenItem(psp: "CB-PSP12", original: "PSP12", code: "CHARGEBACK", value: 1499, reference: "order-12"))
        try await harness.deliver([refund, refund, chargeback, chargeback], processor: processor)
        let delivered = await eventually(timeout: .seconds(60)) { harness.endpoint.received.count >= 3 }
        #expect(await harness.quietQueue())
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value
        #expect(fulfilled)
        #expect(delivered)
        let types = harness.endpoint.received.compactMap { received in
            String(decoding: received.body, as: UTF8.self).split(separator: "\"").dropFirst(3).first.map(String.init)
        }
        #expect(types.sorted() == ["order.charged_back", "order.paid", "order.refunded"])
    }

    @Test("a worker that dies holding a fulfillment job: the rescuer hands it back and it completes once")
    func crashedWorkerRescued() async throws {
        let harness = try await FulfillmentHarness.make("fulfill_rescue")
        defer { harness.endpoint.stop() }
        let order = try await harness.register(Self.registration("order-13"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP13", reference: "order-13", value: 1999),
                                  processor: harness.processor())
        // The "crashed" worker claims the job and never reports back.
        let claimed = try await harness.queue().claim(limit: 10, kinds: ["fulfill_order"], worker: "crashed", lease: .seconds(1))
        #expect(claimed.count == 1)
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled", name: "survivor",
                                            rescueInterval: .milliseconds(500)))
        #expect(harness.endpoint.received.count == 1)
        #expect(try await harness.processing.text("SELECT locked_by AS v FROM jobs WHERE kind = 'fulfill_order'") == "survivor")
    }
}

@Suite("Fulfillment check")
struct FulfillmentCheckTests {
    static func payment(_ id: String, _ minor: Int64?, _ currency: String? = "EUR", status: String = "captured",
                        reference: String? = "order-1", funding: String? = "credit") -> OrderRecord.Payment {
        OrderRecord.Payment(id: 1, providerPaymentID: id, merchantReference: reference, amountMinor: minor, currency: currency,
                            refundedMinor: 0, status: status, statusDetail: nil, method: "visa", funding: funding,
                            chargebacks: 0, chargebackReversals: 0, updatedAt: Date())
    }

    static func order(_ payments: [OrderRecord.Payment], expected: Int64? = 1999, currency: String? = "EUR",
                      status: String = "created") -> OrderRecord {
        OrderRecord(id: 1, provider: "adyen", account: "", providerOrderID: nil, merchantReference: "order-1",
                    expectedAmountMinor: expected, expectedCurrency: currency, status: status, fulfillmentStatus: "pending",
                    reviewReason: nil, callbackURL: nil, registeredAt: Date(), fulfilledAt: nil, createdAt: Date(),
                    updatedAt: Date(), payments: payments)
    }

    static func verdict(_ order: OrderRecord, _ settings: FulfillmentSettings = FulfillmentSettings()) -> String {
        switch FulfillmentCheck.evaluate(order, settings: settings) {
        case .fulfill: "fulfill"
        case .wait(let missing): "wait: " + missing
        case .mismatch(let reason): reason
        }
    }

    @Test("exact amount, currency and reference fulfill, also split across two captures")
    func exactMatch() {
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999)])) == "fulfill")
        #expect(Self.verdict(Self.order([Self.payment("P1", 1000), Self.payment("P2", 999)])) == "fulfill")
        // A declined attempt before the successful one does not count.
        #expect(Self.verdict(Self.order([Self.payment("P0", 1999, status: "declined"), Self.payment("P1", 1999)])) == "fulfill")
    }

    @Test("overpaid, other currency, other reference and other account are mismatches; underpaid and an unknown amount wait for the missing fact")
    func mismatches() {
        #expect(Self.verdict(Self.order([Self.payment("P1", 1998)])).hasPrefix("wait: amount mismatch (underpaid so far)"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 2000)])).hasPrefix("amount mismatch (overpaid)"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999, "USD")])).hasPrefix("currency mismatch"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999, reference: "order-2")])).hasPrefix("merchant reference mismatch"))
        var otherAccount = Self.payment("P1", 1999)
        otherAccount.account = "shop-b"
        #expect(Self.verdict(Self.order([otherAccount])).hasPrefix("account mismatch: payment P1 was delivered for account shop-b"))
        #expect(Self.verdict(Self.order([Self.payment("P1", nil)])) == "wait: payment P1 has no reported amount yet")
        // A contradiction wins over a missing fact: nothing is worth waiting for.
        #expect(Self.verdict(Self.order([Self.payment("P1", nil), Self.payment("P2", 1999, "USD")])).hasPrefix("currency mismatch"))
        #expect(Self.verdict(Self.order([Self.payment("P1", nil), Self.payment("P2", 2000)])).hasPrefix("amount mismatch (overpaid)"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999)], expected: nil, currency: nil)).contains("never registered"))
    }

    @Test("only captured money is paid unless authorized is allowed; refunded or pending money is not")
    func paidStatuses() {
        let authorized = Self.order([Self.payment("P1", 1999, status: "authorized")])
        #expect(Self.verdict(authorized).hasPrefix("wait: no paid payment"))
        var settings = FulfillmentSettings()
        settings.fulfillOnAuthorized = true
        #expect(Self.verdict(authorized, settings) == "fulfill")
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999, status: "refunded")])).hasPrefix("no paid payment"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999)], status: "canceled")).hasPrefix("provider order status is canceled"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999)], status: "pending")).hasPrefix("wait: provider order status is pending"))
    }

    @Test("a captured payment counts what its captures took, not what was authorised: a partial capture waits as underpaid; captures of several payments add up")
    func capturedAmountCounts() {
        var partial = Self.payment("P1", 1999)
        partial.capturedMinor = 800
        #expect(Self.verdict(Self.order([partial])) == "wait: amount mismatch (underpaid so far): paid 800 EUR minor units, order expects 1999")
        var rest = Self.payment("P2", 1199)
        rest.capturedMinor = 1199
        #expect(Self.verdict(Self.order([partial, rest])) == "fulfill")
        var full = partial
        full.capturedMinor = 1999
        #expect(Self.verdict(Self.order([full])) == "fulfill")
        // An authorisation counted as paid (PAYHOOK_FULFILL_ON_AUTHORIZED) counts in full: nothing is captured yet.
        var settings = FulfillmentSettings()
        settings.fulfillOnAuthorized = true
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999, status: "authorized")]), settings) == "fulfill")
        #expect(Self.verdict(Self.order([partial]), settings).hasPrefix("wait: amount mismatch (underpaid so far): paid 800"))
    }

    @Test("a funding restriction refuses other funding types and waits for an unreported one")
    func funding() {
        var settings = FulfillmentSettings()
        settings.allowedFunding = ["credit"]
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999)]), settings) == "fulfill")
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999, funding: "prepaid")]), settings).contains("funding prepaid"))
        #expect(Self.verdict(Self.order([Self.payment("P1", 1999, funding: nil)]), settings) == "wait: funding of payment P1 is not reported yet")
    }
}

@Suite("Order registration input")
struct OrderRegistrationParsingTests {
    static func field(_ body: String) -> String? {
        do {
            _ = try OrderRegistration.parse(Array(body.utf8))
            return nil
        } catch {
            return error.field
        }
    }

    @Test("the documented body parses to exact minor units")
    func parses() throws {
        let parsed = try OrderRegistration.parse(Array(FulfillmentTests.registration("order-42").utf8))
        #expect(parsed.provider == .adyen)
        #expect(parsed.amount.minorUnits == 1999)
        #expect(parsed.amount.currency == "EUR")
        #expect(parsed.merchantReference == "order-42")
        #expect(parsed.providerOrderID == nil)
    }

    @Test("invalid input names the field at fault")
    func namesField() {
        #expect(Self.field("not json") == "body")
        #expect(Self.field(#"{"merchant_reference": "a", "amount": {"value": 1, "currency": "EUR"}}"#) == "provider")
        #expect(Self.field(#"{"provider": "stripe", "merchant_reference": "a", "amount": {"value": 1, "currency": "EUR"}}"#) == "provider")
        #expect(Self.field(#"{"provider": "adyen", "amount": {"value": 1, "currency": "EUR"}}"#) == "merchant_reference")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a", "amount": {"value": 19.99, "currency": "EUR"}}"#) == "amount.value")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a", "amount": {"value": "1999", "currency": "EUR"}}"#) == "amount.value")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a", "amount": {"value": 0, "currency": "EUR"}}"#) == "amount.value")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a", "amount": {"value": 1, "currency": "eur"}}"#) == "amount.currency")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a"}"#) == "amount")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a", "amount": {"value": 1, "currency": "EUR"}, "callback_url": "ftp://x"}"#) == "callback_url")
        #expect(Self.field(#"{"provider": "adyen", "merchant_reference": "a", "amount": {"value": 1, "currency": "EUR"}, "colour": 1}"#) == "colour")
    }
}
