import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookProcessing

/// Adyen lifecycles through the processor and PostgreSQL: partial captures, dispute stages,
/// refunds reversed, closed offers, adjusted authorisations and currencies whose exponent
/// differs from ISO 4217. Item shapes follow Adyen's notification mocks (docs/providers.md,
/// "Adyen: sources of the fixtures").
@Suite("Adyen lifecycles", .timeLimit(.minutes(5)))
struct AdyenLifecycleTests {
    static func item(_ psp: String, _ original: String?, _ code: String, _ value: Int64, currency: String = "EUR",
                     date: String = "2025-06-02T10:00:00+02:00") -> String {
        Bodies.adyenItem(psp: psp, original: original, code: code, value: value, currency: currency, date: date)
    }

    func captured(_ harness: ProcessingHarness, _ psp: String) async throws -> Int64? {
        let rows = try await harness.pool.query(
            "SELECT captured_minor FROM payments WHERE provider = 'adyen' AND provider_payment_id = $1", [.text(psp)])
        return try rows.rows.first?.decode("captured_minor", as: Int64?.self)
    }

    @Test("two partial captures add up in every order, each counted once however it is re-sent; a failed one stops counting")
    func partialCaptures() async throws {
        let harness = try await ProcessingHarness.make("adyen_partial_captures")
        let processor = harness.processor()
        for (run, order) in permutations(Array(0..<4)).enumerated() {
            let psp = "PC\(run)"
            let bodies = [
                Bodies.adyen(Self.item(psp, nil, "AUTHORISATION", 10000)),
                Bodies.adyen(Self.item("C1-\(psp)", psp, "CAPTURE", 4000)),
                Bodies.adyen(Self.item("C2-\(psp)", psp, "CAPTURE", 2500)),
                // The first capture again, re-dated, inside a two-item batch: a new delivery.
                Bodies.adyen(Self.item(psp, nil, "AUTHORISATION", 10000),
                             Self.item("C1-\(psp)", psp, "CAPTURE", 4000, date: "2025-06-03T08:00:00+02:00")),
            ]
            for index in order {
                try await harness.insert(.adyen, bodies[index])
                try await harness.drain(processor)
            }
            #expect(try await captured(harness, psp) == 6500, "order \(order)")
            let row = try #require(try await harness.payment(.adyen, psp))
            #expect(row.status == "captured" && row.amountMinor == 10000, "order \(order)")
        }
        try await harness.insert(.adyen, Bodies.adyen(Self.item("C2-PC0", "PC0", "CAPTURE_FAILED", 2500)))
        try await harness.drain(processor)
        #expect(try await captured(harness, "PC0") == 4000)
        // A failure that arrives before its capture leaves a tombstone: the late capture never counts.
        try await harness.insert(.adyen, Bodies.adyen(Self.item("C9-LATE", "LATE1", "CAPTURE_FAILED", 3000)))
        try await harness.drain(processor)
        try await harness.insert(.adyen, Bodies.adyen(Self.item("C9-LATE", "LATE1", "CAPTURE", 3000)))
        try await harness.insert(.adyen, Bodies.adyen(Self.item("C8-LATE", "LATE1", "CAPTURE", 1000)))
        try await harness.drain(processor)
        #expect(try await captured(harness, "LATE1") == 1000)
        // A payment with no capture reported one by one has no captured amount.
        try await harness.insert(.adyen, Bodies.adyen(Self.item("AUTHONLY", nil, "AUTHORISATION", 10000)))
        try await harness.drain(processor)
        #expect(try await captured(harness, "AUTHONLY") == nil)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM inbound_events WHERE status <> 'processed'") == 0)
    }

    @Test("the order record shows captured 4,000 of 10,000")
    func capturedExposed() async throws {
        let harness = try await ProcessingHarness.make("adyen_captured_exposed")
        let processor = harness.processor()
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "EXP1", code: "AUTHORISATION", value: 10000,
                                                                      reference: "order-exp")))
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "CAP-EXP1", original: "EXP1", code: "CAPTURE",
                                                                      value: 4000, reference: "order-exp")))
        try await harness.drain(processor)
        let orderID = try await harness.scalar("""
            INSERT INTO orders (provider, account, provider_order_id, merchant_reference, status)
            VALUES ('adyen', '', 'order-exp', 'order-exp', 'created') RETURNING id AS n
            """)
        try await harness.pool.query("UPDATE payments SET order_id = $1 WHERE provider_payment_id = 'EXP1'", [.int(orderID)])
        let order = try await harness.pool.withConnection { connection in
            try await OrderRecord.load(id: orderID, on: connection)
        }
        let payment = try #require(order?.payments.first)
        #expect(payment.capturedMinor == 4000 && payment.amountMinor == 10000)
        let json = try #require(order).paymentJSON(payment).rendered
        #expect(json.contains(#""amount":{"value":10000,"currency":"EUR"},"refunded":{"value":0,"currency":"EUR"},"captured":{"value":4000,"currency":"EUR"}"#))
    }

    @Test("chargeback, reversed, second chargeback: charged back again; prearbitration won gives it back, lost takes it")
    func disputeStages() async throws {
        let harness = try await ProcessingHarness.make("adyen_dispute_stages")
        let processor = harness.processor()
        func deliver(_ psp: String, _ codes: [String]) async throws -> PaymentRow {
            try await harness.insert(.adyen, Bodies.adyen(Self.item(psp, nil, "AUTHORISATION", 10000)))
            try await harness.insert(.adyen, Bodies.adyen(Self.item("C-\(psp)", psp, "CAPTURE", 10000)))
            for code in codes {
                try await harness.insert(.adyen, Bodies.adyen(Self.item("D-\(psp)", psp, code, 10000)))
            }
            try await harness.drain(processor)
            return try #require(try await harness.payment(.adyen, psp))
        }
        let notices = try await deliver("DS0", ["NOTIFICATION_OF_CHARGEBACK", "REQUEST_FOR_INFORMATION"])
        #expect(notices.status == "captured" && notices.chargebacks == 0)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events WHERE type = 'payment.notice'") == 2)

        let second = try await deliver("DS1", ["CHARGEBACK", "CHARGEBACK_REVERSED", "SECOND_CHARGEBACK"])
        #expect(second.status == "charged_back" && second.chargebacks == 2 && second.reversals == 1)
        let won = try await deliver("DS2", ["CHARGEBACK", "CHARGEBACK_REVERSED", "SECOND_CHARGEBACK", "PREARBITRATION_WON"])
        #expect(won.status == "captured" && won.chargebacks == 2 && won.reversals == 2)
        let lost = try await deliver("DS3", ["CHARGEBACK", "CHARGEBACK_REVERSED", "PREARBITRATION_LOST"])
        #expect(lost.status == "charged_back" && lost.chargebacks == 2 && lost.reversals == 1)
        // Order does not matter: the second chargeback first, the original last.
        let reordered = try await deliver("DS4", ["SECOND_CHARGEBACK", "CHARGEBACK_REVERSED", "CHARGEBACK"])
        #expect(reordered.status == "charged_back" && reordered.chargebacks == 2)
    }

    @Test("REFUNDED_REVERSED: the refund no longer counts; OFFER_CLOSED ends an open payment; AUTHORISATION_ADJUSTMENT changes the amount")
    func otherCodes() async throws {
        let harness = try await ProcessingHarness.make("adyen_other_codes")
        let processor = harness.processor()
        for body in [
            Bodies.adyen(Self.item("RR1", nil, "AUTHORISATION", 10000)),
            Bodies.adyen(Self.item("C-RR1", "RR1", "CAPTURE", 10000)),
            Bodies.adyen(Self.item("F-RR1", "RR1", "REFUND", 2500)),
            Bodies.adyen(Self.item("F-RR1", "RR1", "REFUNDED_REVERSED", 2500)),
            Bodies.adyen(Self.item("OC1", nil, "PENDING", 27211)),
            Bodies.adyen(Self.item("OC1", nil, "OFFER_CLOSED", 27211)),
            Bodies.adyen(Self.item("AA1", nil, "AUTHORISATION", 10000)),
            Bodies.adyen(Self.item("ADJ-AA1", "AA1", "AUTHORISATION_ADJUSTMENT", 12500)),
        ] {
            try await harness.insert(.adyen, body)
            try await harness.drain(processor)
        }
        #expect(try await harness.payment(.adyen, "RR1") == PaymentRow(
            status: "captured", amountMinor: 10000, currency: "EUR", refundedMinor: 0, chargebacks: 0, reversals: 0))
        #expect(try await harness.payment(.adyen, "OC1")?.status == "expired")
        #expect(try await harness.payment(.adyen, "AA1") == PaymentRow(
            status: "authorized", amountMinor: 12500, currency: "EUR", refundedMinor: 0, chargebacks: 0, reversals: 0))
        // The adjusted amount stands when the original authorisation is delivered again.
        try await harness.insert(.adyen, Bodies.adyen(Self.item("AA1", nil, "AUTHORISATION", 10000)))
        try await harness.drain(processor)
        #expect(try await harness.payment(.adyen, "AA1")?.amountMinor == 12500)
    }

    @Test("a genuine AUTHORISATION replayed with a later eventDate and other unsigned data changes neither funding nor a disabled token")
    func unsignedFieldsDecideNothing() async throws {
        let harness = try await ProcessingHarness.make("adyen_unsigned")
        let processor = harness.processor()
        func authorisation(date: String, funding: String) -> String {
            Bodies.adyenItem(psp: "UNS1", code: "AUTHORISATION", value: 5000, date: date,
                             extra: ["fundingSource": funding, "tokenization.storedPaymentMethodId": "TOK-UNS1",
                                     "tokenization.shopperReference": "shopper-7781"])
        }
        try await harness.insert(.adyen, Bodies.adyen(authorisation(date: "2025-06-01T10:00:00+02:00", funding: "DEBIT")))
        try await harness.drain(processor)
        try await harness.insert(.adyen, Bodies.adyenToken(type: "recurring.token.disabled", token: "TOK-UNS1", eventID: "EV-UNS1",
                                                           createdAt: "2025-06-05T10:00:00+02:00"))
        try await harness.drain(processor)
        // The same signed item, re-dated after the disablement and claiming credit, beside another item.
        try await harness.insert(.adyen, Bodies.adyen(Self.item("OTHER1", nil, "PENDING", 100),
                                                      authorisation(date: "2025-07-01T10:00:00+02:00", funding: "CREDIT")))
        try await harness.drain(processor)
        #expect(try await harness.text("SELECT funding AS v FROM payments WHERE provider_payment_id = 'UNS1'") == "debit")
        #expect(try await harness.text("SELECT status AS v FROM vault_tokens WHERE token = 'TOK-UNS1'") == "disabled")
    }

    @Test("CLP, JPY and KWD payments store ISO minor units; a CLP amount ISO cannot hold is dead-lettered, not rounded")
    func exponentCurrencies() async throws {
        let harness = try await ProcessingHarness.make("adyen_exponents")
        let processor = harness.processor(maxAttempts: 1)
        try await harness.insert(.adyen, Bodies.adyen(Self.item("CLP1", nil, "AUTHORISATION", 1_234_500, currency: "CLP")))
        try await harness.insert(.adyen, Bodies.adyen(Self.item("C-CLP1", "CLP1", "CAPTURE", 1_234_500, currency: "CLP")))
        try await harness.insert(.adyen, Bodies.adyen(Self.item("F-CLP1", "CLP1", "REFUND", 34_500, currency: "CLP")))
        try await harness.insert(.adyen, Bodies.adyen(Self.item("JPY1", nil, "AUTHORISATION", 1000, currency: "JPY")))
        try await harness.insert(.adyen, Bodies.adyen(Self.item("KWD1", nil, "AUTHORISATION", 12_345, currency: "KWD")))
        let odd = try await harness.insert(.adyen, Bodies.adyen(Self.item("CLP2", nil, "AUTHORISATION", 1_234_550, currency: "CLP")))
        try await harness.drain(processor)
        #expect(try await harness.payment(.adyen, "CLP1") == PaymentRow(
            status: "partially_refunded", amountMinor: 12_345, currency: "CLP", refundedMinor: 345, chargebacks: 0, reversals: 0))
        #expect(try await captured(harness, "CLP1") == 12_345)
        #expect(try await harness.payment(.adyen, "JPY1")?.amountMinor == 1000)
        #expect(try await harness.payment(.adyen, "KWD1")?.amountMinor == 12_345)
        #expect(try await harness.payment(.adyen, "CLP2") == nil)
        let inbound = try await harness.inbound(odd)
        #expect(inbound.status == "dead")
        #expect(inbound.lastError?.contains("amount.value") == true)
    }
}

@Suite("Adyen disputes reach the merchant", .timeLimit(.minutes(5)))
struct AdyenDisputeCallbackTests {
    @Test("a re-dated chargeback re-sent in a two-item batch sends no second order.charged_back; a second chargeback does")
    func oneCallbackPerDisputeStage() async throws {
        let harness = try await FulfillmentHarness.make("adyen_dispute_callbacks")
        defer { harness.endpoint.stop() }
        let order = try await harness.register(FulfillmentTests.registration("order-77"))
        let processor = harness.processor()
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP77", reference: "order-77", value: 1999), processor: processor)
        let (worker, task) = try harness.startWorker(name: "w")
        let fulfilled = await eventually(timeout: .seconds(60)) {
            (try? await harness.order(order.id).fulfillmentStatus) == "fulfilled"
        }
        func dispute(_ code: String, date: String) -> String {
            Bodies.adyenItem(psp: "DSP-PSP77", original: "PSP77", code: code, value: 1999, reference: "order-77", date: date)
        }
        let authorisation = Bodies.adyenItem(psp: "PSP77", code: "AUTHORISATION", value: 1999, reference: "order-77")
        try await harness.deliver([Bodies.adyen(dispute("CHARGEBACK", date: "2025-06-10T10:00:00+02:00"))], processor: processor)
        let first = await eventually(timeout: .seconds(60)) { harness.endpoint.received.count >= 2 }
        // The same signed chargeback, only its unsigned eventDate changed, beside another item.
        try await harness.deliver([Bodies.adyen(authorisation, dispute("CHARGEBACK", date: "2025-06-12T10:00:00+02:00"))],
                                  processor: processor)
        #expect(await harness.quietQueue())
        let afterReplay = harness.endpoint.received.count
        try await harness.deliver([Bodies.adyen(dispute("CHARGEBACK_REVERSED", date: "2025-07-10T10:00:00+02:00")),
                                   Bodies.adyen(dispute("SECOND_CHARGEBACK", date: "2025-08-10T10:00:00+02:00"))],
                                  processor: processor)
        let second = await eventually(timeout: .seconds(60)) { harness.endpoint.received.count >= 4 }
        #expect(await harness.quietQueue())
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value
        #expect(fulfilled && first && second)
        #expect(afterReplay == 2)
        let types = harness.endpoint.received.compactMap { received in
            String(decoding: received.body, as: UTF8.self).split(separator: "\"").dropFirst(3).first.map(String.init)
        }
        // The reversal and the second chargeback, processed together, are both reported (in either order).
        #expect(Array(types.prefix(2)) == ["order.paid", "order.charged_back"])
        #expect(types.dropFirst(2).sorted() == ["order.chargeback_reversed", "order.charged_back"])
        #expect(try await harness.processing.payment(.adyen, "PSP77")?.status == "charged_back")
    }
}
