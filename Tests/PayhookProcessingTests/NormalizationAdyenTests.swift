import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookPostgres
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing

@Suite("Normalization: Adyen", .timeLimit(.minutes(5)))
struct NormalizationAdyenTests {
    /// The five deliveries of one payment's life: authorise (with a new token), capture, a
    /// partial refund delivered twice under different dedup keys, and the rest refunded.
    static func life(_ psp: String) -> [String] {
        let token = ["tokenization.storedPaymentMethodId": "TOK-\(psp)", "tokenization.shopperReference": "shopper-7781",
                     "cardSummary": "0007", "expiryDate": "03/2030", "fundingSource": "CREDIT"]
        return [
            Bodies.adyen(Bodies.adyenItem(psp: psp, code: "AUTHORISATION", value: 10010, extra: token)),
            Bodies.adyen(Bodies.adyenItem(psp: "CAP-\(psp)", original: psp, code: "CAPTURE", value: 10010)),
            Bodies.adyen(Bodies.adyenItem(psp: "RF1-\(psp)", original: psp, code: "REFUND", value: 4000)),
            Bodies.adyen(Bodies.adyenItem(psp: "RF1-\(psp)", original: psp, code: "REFUND", value: 4000)),
            Bodies.adyen(Bodies.adyenItem(psp: "RF2-\(psp)", original: psp, code: "REFUND", value: 6010)),
        ]
    }

    /// A dispute's four deliveries: authorise, capture, chargeback, and its reversal.
    static func dispute(_ psp: String) -> [String] {
        [
            Bodies.adyen(Bodies.adyenItem(psp: psp, code: "AUTHORISATION", value: 12345, currency: "BHD")),
            Bodies.adyen(Bodies.adyenItem(psp: "C-\(psp)", original: psp, code: "CAPTURE", value: 12345, currency: "BHD")),
            Bodies.adyen(Bodies.adyenItem(psp: "D-\(psp)", original: psp, code: "CHARGEBACK", value: 12345, currency: "BHD")),
            Bodies.adyen(Bodies.adyenItem(psp: "D-\(psp)", original: psp, code: "CHARGEBACK_REVERSED", value: 12345, currency: "BHD")),
        ]
    }

    @Test("a full payment life ends refunded, with one history row per delivery and the token stored")
    func fullLife() async throws {
        let harness = try await ProcessingHarness.make("adyen_life")
        let processor = harness.processor()
        var expectations = ["authorized", "captured", "partially_refunded", "partially_refunded", "refunded"]
        for body in Self.life("LIFE1") {
            try await harness.insert(.adyen, body)
            try await harness.drain(processor)
            let row = try #require(try await harness.payment(.adyen, "LIFE1"))
            #expect(row.status == expectations.removeFirst())
        }
        let row = try #require(try await harness.payment(.adyen, "LIFE1"))
        #expect(row == PaymentRow(status: "refunded", amountMinor: 10010, currency: "EUR", refundedMinor: 10010,
                                  chargebacks: 0, reversals: 0))
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events WHERE payment_id = (SELECT id FROM payments WHERE provider_payment_id = 'LIFE1')") == 5)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_adjustments WHERE kind = 'refund'") == 2)
        #expect(try await harness.text("SELECT status || ':' || last4 || ':' || expiry AS v FROM vault_tokens WHERE token = 'TOK-LIFE1'") == "active:0007:03/2030")
        #expect(try await harness.scalar("SELECT count(*) AS n FROM inbound_events WHERE status <> 'processed'") == 0)
        let types = try await harness.pool.query("SELECT type FROM payment_events ORDER BY id").rows.map { try $0.decode("type", as: String.self) }
        #expect(types == ["payment.authorized", "payment.captured", "payment.refunded", "payment.refunded", "payment.refunded"])
    }

    @Test("a chargeback or failed capture item delivered again in a differently composed batch counts once; a later dispute stage counts again")
    func adjustmentIdentity() async throws {
        let harness = try await ProcessingHarness.make("adyen_adjust_identity")
        let processor = harness.processor()
        let auth = Bodies.adyenItem(psp: "ADJ1", code: "AUTHORISATION", value: 5000)
        let chargeback = Bodies.adyenItem(psp: "ADJ1", code: "CHARGEBACK", value: 5000, date: "2025-03-01T10:00:00+01:00")
        let failed = Bodies.adyenItem(psp: "CF-ADJ2", original: "ADJ2", code: "CAPTURE_FAILED", value: 700)
        try await harness.insert(.adyen, Bodies.adyen(auth, chargeback))
        try await harness.insert(.adyen, Bodies.adyen(chargeback))
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "ADJ2", code: "AUTHORISATION", value: 700), failed))
        try await harness.insert(.adyen, Bodies.adyen(failed, chargeback))
        try await harness.drain(processor)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_adjustments WHERE kind = 'chargeback'") == 1)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_adjustments WHERE kind = 'capture_failure'") == 1)
        #expect(try await harness.payment(.adyen, "ADJ1")?.chargebacks == 1)

        // The same signed item with another (unsigned) eventDate, re-sent inside a two-item
        // batch: a new delivery to dedup, but the same chargeback.
        let redated = Bodies.adyenItem(psp: "ADJ1", code: "CHARGEBACK", value: 5000, date: "2025-04-01T10:00:00+01:00")
        try await harness.insert(.adyen, Bodies.adyen(auth, redated))
        try await harness.drain(processor)
        #expect(try await harness.payment(.adyen, "ADJ1")?.chargebacks == 1)

        let second = Bodies.adyenItem(psp: "ADJ1", code: "SECOND_CHARGEBACK", value: 5000, date: "2025-04-01T10:00:00+01:00")
        try await harness.insert(.adyen, Bodies.adyen(second))
        try await harness.drain(processor)
        #expect(try await harness.payment(.adyen, "ADJ1")?.chargebacks == 2)
    }

    @Test("every permutation of the five life deliveries converges to the same rows")
    func permutationsConverge() async throws {
        let harness = try await ProcessingHarness.make("adyen_perm")
        let processor = harness.processor()
        let orders = permutations(Array(0..<5))
        #expect(orders.count == 120)
        for (run, order) in orders.enumerated() {
            let psp = "PERM\(run)"
            let bodies = Self.life(psp)
            for index in order {
                try await harness.insert(.adyen, bodies[index])
                try await harness.drain(processor)
            }
            let row = try await harness.payment(.adyen, psp)
            #expect(row == PaymentRow(status: "refunded", amountMinor: 10010, currency: "EUR", refundedMinor: 10010,
                                      chargebacks: 0, reversals: 0), "order \(order)")
        }
        #expect(try await harness.scalar("SELECT count(*) AS n FROM inbound_events WHERE status <> 'processed'") == 0)
    }

    @Test("a chargeback and its reversal converge in every order; the reversal restores the capture")
    func disputes() async throws {
        let harness = try await ProcessingHarness.make("adyen_dispute")
        let processor = harness.processor()
        for (run, order) in permutations(Array(0..<4)).enumerated() {
            let psp = "CB\(run)"
            let bodies = Self.dispute(psp)
            for index in order {
                try await harness.insert(.adyen, bodies[index])
                try await harness.drain(processor)
            }
            #expect(try await harness.payment(.adyen, psp) == PaymentRow(
                status: "captured", amountMinor: 12345, currency: "BHD", refundedMinor: 0, chargebacks: 1, reversals: 1),
                    "order \(order)")
        }
        // A chargeback alone, after capture: charged_back.
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "CBX", code: "AUTHORISATION", value: 500)))
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "C-CBX", original: "CBX", code: "CAPTURE", value: 500)))
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "D-CBX", original: "CBX", code: "CHARGEBACK", value: 500)))
        try await harness.drain(processor)
        #expect(try await harness.payment(.adyen, "CBX")?.status == "charged_back")
    }

    @Test("a refused authorisation is a declined payment with Adyen's reason")
    func declined() async throws {
        let harness = try await ProcessingHarness.make("adyen_declined")
        let body = Bodies.adyen(Bodies.adyenItem(psp: "DECL1", code: "AUTHORISATION", success: false, value: 1500, currency: "JPY"))
            .replacingOccurrences(of: "\"reason\":\"\"", with: "\"reason\":\"Not enough balance\"")
        try await harness.insert(.adyen, body)
        try await harness.drain(harness.processor())
        #expect(try await harness.payment(.adyen, "DECL1") == PaymentRow(
            status: "declined", amountMinor: 1500, currency: "JPY", refundedMinor: 0, chargebacks: 0, reversals: 0))
        #expect(try await harness.text("SELECT status_detail AS v FROM payments WHERE provider_payment_id = 'DECL1'") == "Not enough balance")
    }

    @Test("a token created then disabled ends disabled, in either order")
    func tokenLife() async throws {
        let harness = try await ProcessingHarness.make("adyen_token")
        let processor = harness.processor()
        for (run, order) in [[0, 1], [1, 0]].enumerated() {
            let token = "TOKEN\(run)"
            let bodies = [
                Bodies.adyenToken(type: "recurring.token.created", token: token, eventID: "E1-\(run)", createdAt: "2025-02-24T15:20:56+01:00"),
                Bodies.adyenToken(type: "recurring.token.disabled", token: token, eventID: "E2-\(run)", createdAt: "2025-03-01T09:00:00+01:00"),
            ]
            for index in order {
                try await harness.insert(.adyen, bodies[index])
                try await harness.drain(processor)
            }
            #expect(try await harness.text("SELECT status AS v FROM vault_tokens WHERE token = $1", [.text(token)]) == "disabled")
            #expect(try await harness.scalar(
                "SELECT count(*) AS n FROM payment_events WHERE vault_token_id = (SELECT id FROM vault_tokens WHERE token = $1)",
                [.text(token)]) == 2)
        }
    }

    @Test("the same delivery stored twice and a claimed row processed twice change nothing twice")
    func duplicates() async throws {
        let harness = try await ProcessingHarness.make("adyen_dup")
        let processor = harness.processor()
        let bodies = Self.life("DUP1")
        for body in bodies.prefix(3) { try await harness.insert(.adyen, body) }
        try await harness.drain(processor)
        let before = try await harness.payment(.adyen, "DUP1")
        try await harness.insert(.adyen, bodies[2])
        try await harness.insert(.adyen, bodies[1])
        try await harness.drain(processor)
        #expect(try await harness.payment(.adyen, "DUP1") == before)
        #expect(before?.refundedMinor == 4000)
        let again = try await harness.drain(processor)
        #expect(again.claimed == 0, "processed rows are never claimed again")
    }

    @Test("unknown event codes are stored as unknown and processed, never failed")
    func unknownCodes() async throws {
        let harness = try await ProcessingHarness.make("adyen_unknown")
        let id = try await harness.insert(.adyen, Bodies.adyen(
            Bodies.adyenItem(psp: "REP1", code: "REPORT_AVAILABLE", value: nil),
            Bodies.adyenItem(psp: "PEND1", code: "PENDING", value: 700)))
        try await harness.drain(harness.processor())
        #expect(try await harness.inbound(id).status == "processed")
        #expect(try await harness.text("SELECT data->>'provider_event_type' AS v FROM payment_events WHERE type = 'unknown'") == "REPORT_AVAILABLE")
        #expect(try await harness.payment(.adyen, "PEND1")?.status == "pending")
    }
}
