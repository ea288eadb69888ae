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

@Suite("Normalization: PXP", .timeLimit(.minutes(5)))
struct NormalizationPXPTests {
    static func fetched(_ id: String, _ state: String, _ status: PaymentStatus, refunded: Int64? = nil) -> PaymentSnapshot {
        Bodies.pxpFetched(id, state, status, refunded: refunded)
    }

    /// Webhook state and what the transactions API answers at that moment: authorised,
    /// captured, partially refunded (state still Captured), refunded, and a late duplicate of
    /// the capture webhook whose fetch answers the captured state.
    static func life(_ id: String) -> [(webhook: String, fetched: PaymentSnapshot)] {
        [
            ("Authorised", fetched(id, "Authorised", .authorized)),
            ("Captured", fetched(id, "Captured", .captured)),
            ("Captured", fetched(id, "Captured", .captured, refunded: 4000)),
            ("Refunded", fetched(id, "Refunded", .refunded, refunded: 10010)),
            ("Captured", fetched(id, "Captured", .captured)),
        ]
    }

    @Test("a full transaction life, confirmed by fetches, ends refunded")
    func fullLife() async throws {
        let harness = try await ProcessingHarness.make("pxp_life")
        let processor = harness.processor()
        var expected = ["authorized", "captured", "partially_refunded", "refunded", "refunded"]
        for step in Self.life("TX1") {
            harness.pxp.setPayment(step.fetched)
            try await harness.insert(.pxp, Bodies.pxpTransaction("TX1", state: step.webhook))
            try await harness.drain(processor)
            #expect(try await harness.payment(.pxp, "TX1")?.status == expected.removeFirst())
        }
        #expect(try await harness.payment(.pxp, "TX1") == PaymentRow(
            status: "refunded", amountMinor: 10010, currency: "EUR", refundedMinor: 10010, chargebacks: 0, reversals: 0))
        #expect(try await harness.text("SELECT data->>'note' AS v FROM payment_events ORDER BY id LIMIT 1") == "webhook_state=Authorised")
        #expect(harness.pxp.calls == 5)
    }

    @Test("every permutation of the five deliveries converges")
    func permutationsConverge() async throws {
        let harness = try await ProcessingHarness.make("pxp_perm")
        let processor = harness.processor()
        for (run, order) in permutations(Array(0..<5)).enumerated() {
            let id = "TXP\(run)"
            let steps = Self.life(id)
            for index in order {
                harness.pxp.setPayment(steps[index].fetched)
                try await harness.insert(.pxp, Bodies.pxpTransaction(id, state: steps[index].webhook))
                try await harness.drain(processor)
            }
            #expect(try await harness.payment(.pxp, id) == PaymentRow(
                status: "refunded", amountMinor: 10010, currency: "EUR", refundedMinor: 10010, chargebacks: 0, reversals: 0),
                    "order \(order)")
        }
    }

    @Test("a refused transaction is declined; Executed is captured; a state outside PXP's enum is retried, then dead-lettered")
    func declined() async throws {
        let harness = try await ProcessingHarness.make("pxp_declined")
        let processor = harness.processor(maxAttempts: 2)
        harness.pxp.setPayment(Self.fetched("TXD", "Refused", .declined))
        harness.pxp.setPayment(Self.fetched("TXE", "Executed", .captured))
        try await harness.insert(.pxp, Bodies.pxpTransaction("TXD", state: "Refused"))
        try await harness.insert(.pxp, Bodies.pxpTransaction("TXE", state: "Executed"))
        let unknown = try await harness.insert(.pxp, Bodies.pxpTransaction("TXU", state: "Teleported"))
        try await harness.drain(processor)
        #expect(try await harness.payment(.pxp, "TXD")?.status == "declined")
        #expect(try await harness.payment(.pxp, "TXE")?.status == "captured")
        #expect(try await harness.inbound(unknown).status == "pending")
        harness.clock.advance(by: 3600)
        try await harness.drain(processor)
        #expect(try await harness.inbound(unknown).status == "dead")
        #expect(try await harness.payment(.pxp, "TXU") == nil)
    }

    @Test("a delivery whose body is a JSON array of events processes each element as its own event, stored once")
    func arrayBody() async throws {
        let harness = try await ProcessingHarness.make("pxp_array")
        harness.pxp.setPayment(Self.fetched("TXA1", "Authorised", .authorized))
        harness.pxp.setPayment(Self.fetched("TXA2", "Captured", .captured))
        let body = "[" + Bodies.pxpTransaction("TXA1", state: "Authorised") + "," + Bodies.pxpTransaction("TXA2", state: "Captured") + "]"
        let id = try await harness.insert(.pxp, body)
        #expect(try await harness.drain(harness.processor()).processed == 1)
        #expect(try await harness.inbound(id).status == "processed")
        #expect(try await harness.payment(.pxp, "TXA1")?.status == "authorized")
        #expect(try await harness.payment(.pxp, "TXA2")?.status == "captured")
        #expect(try await harness.scalar("SELECT count(*) AS n FROM inbound_events") == 1)
    }

    @Test("a chargeback reported by the transactions API ends charged_back")
    func chargeback() async throws {
        let harness = try await ProcessingHarness.make("pxp_cb")
        let processor = harness.processor()
        harness.pxp.setPayment(Self.fetched("TXC", "Captured", .captured))
        try await harness.insert(.pxp, Bodies.pxpTransaction("TXC", state: "Captured"))
        try await harness.drain(processor)
        harness.pxp.setPayment(Self.fetched("TXC", "ChargedBack", .chargedBack))
        try await harness.insert(.pxp, Bodies.pxpTransaction("TXC", state: "Captured"))
        try await harness.drain(processor)
        #expect(try await harness.payment(.pxp, "TXC")?.status == "charged_back")
    }

    @Test("a token created then disabled ends disabled in either order; only the last four digits are kept")
    func tokenLife() async throws {
        let harness = try await ProcessingHarness.make("pxp_token")
        let processor = harness.processor()
        for (run, order) in [[0, 1], [1, 0]].enumerated() {
            let token = "gw-\(run)"
            let bodies = [Bodies.pxpToken(token, status: "Active", date: "2025-05-20T08:51:05Z"),
                          Bodies.pxpToken(token, status: "Disabled", date: "2025-06-01T10:00:00Z")]
            for index in order {
                try await harness.insert(.pxp, bodies[index])
                try await harness.drain(processor)
            }
            #expect(try await harness.text("SELECT status || ':' || last4 || ':' || expiry AS v FROM vault_tokens WHERE token = $1",
                                           [.text(token)]) == "disabled:0007:04/2030")
        }
        #expect(harness.pxp.calls == 0, "token events are self-contained")
    }
}
