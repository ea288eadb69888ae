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

@Suite("Normalization: Mercado Pago", .timeLimit(.minutes(5)))
struct NormalizationMercadoPagoTests {
    static let t0 = Date(timeIntervalSince1970: 1_742_900_000)

    static func payment(_ id: String, order: String?, _ status: PaymentStatus, refunded: Int64? = nil, at minutes: Double,
                        detail: String? = nil, card: String? = nil) -> PaymentSnapshot {
        let at = t0.addingTimeInterval(minutes * 60)
        return PaymentSnapshot(
            provider: .mercadopago, account: "1873904477", providerPaymentID: id, providerOrderID: order,
            merchantReference: "ext-\(order ?? id)", amount: .test(10000, "BRL"), transition: .advance(status),
            statusDetail: detail, providerStatus: status.rawValue, method: "master", funding: "credit", occurredAt: at,
            refund: refunded.map { .total(.test($0, "BRL")) },
            vaultToken: card.map { VaultTokenSnapshot(provider: .mercadopago, account: "1873904477", token: $0,
                                                      customerID: "cust-1", brand: "master", status: .active, occurredAt: at) })
    }

    static func order(_ id: String, _ status: PaymentStatus, providerStatus: String, refunded: Int64? = nil,
                      at minutes: Double, card: String? = nil) -> OrderSnapshot {
        OrderSnapshot(provider: .mercadopago, account: "1873904477", providerOrderID: id, merchantReference: "ext-\(id)",
                      amount: .test(10000, "BRL"), providerStatus: providerStatus, status: status,
                      payments: [payment("PAY-\(id)", order: id, status, refunded: refunded, at: minutes, card: card)],
                      updatedAt: t0.addingTimeInterval(minutes * 60))
    }

    /// Five deliveries and the provider state each fetch returns at that moment: authorised
    /// (waiting capture), processed, partially refunded, refunded, and a classic payment
    /// notification whose fetch returns the partially refunded payment.
    enum Step { case order(OrderSnapshot), payment(PaymentSnapshot) }
    static func life(_ id: String) -> [Step] {
        [
            .order(order(id, .authorized, providerStatus: "action_required", at: 1, card: "CARD-\(id)")),
            .order(order(id, .captured, providerStatus: "processed", at: 2)),
            .order(order(id, .partiallyRefunded, providerStatus: "processed", refunded: 4000, at: 3)),
            .order(order(id, .refunded, providerStatus: "refunded", refunded: 10000, at: 4)),
            .payment(payment("PAY-\(id)", order: id, .partiallyRefunded, refunded: 4000, at: 3.5)),
        ]
    }

    func deliver(_ step: Step, orderID: String, harness: ProcessingHarness, notification: Int) async throws {
        switch step {
        case .order(let snapshot):
            harness.mercadoPago.setOrder(snapshot)
            try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: orderID, notification: notification))
        case .payment(let snapshot):
            harness.mercadoPago.setPayment(snapshot)
            try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: snapshot.providerPaymentID, notification: notification))
        }
    }

    @Test("a full order life ends refunded; order, payment and saved card rows are linked")
    func fullLife() async throws {
        let harness = try await ProcessingHarness.make("mp_life")
        let processor = harness.processor()
        for (index, step) in Self.life("ORD1").enumerated() {
            try await deliver(step, orderID: "ORD1", harness: harness, notification: index)
            try await harness.drain(processor)
        }
        #expect(try await harness.payment(.mercadopago, "PAY-ORD1") == PaymentRow(
            status: "refunded", amountMinor: 10000, currency: "BRL", refundedMinor: 10000, chargebacks: 0, reversals: 0))
        #expect(try await harness.text("SELECT status AS v FROM orders WHERE provider_order_id = 'ORD1'") == "refunded")
        #expect(try await harness.scalar("""
            SELECT count(*) AS n FROM payments p JOIN orders o ON o.id = p.order_id
            WHERE p.provider_payment_id = 'PAY-ORD1' AND o.provider_order_id = 'ORD1'
            """) == 1)
        #expect(try await harness.text("SELECT customer_id AS v FROM vault_tokens WHERE token = 'CARD-ORD1'") == "cust-1")
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events WHERE type = 'order.updated'") == 4)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events WHERE (data->>'stale')::bool") == 1,
                "the payment fetched at 3.5 min is older than the order state of 4 min")
    }

    @Test("every permutation of the five deliveries converges, older fetched snapshots refused")
    func permutationsConverge() async throws {
        let harness = try await ProcessingHarness.make("mp_perm")
        let processor = harness.processor()
        for (run, order) in permutations(Array(0..<5)).enumerated() {
            let orderID = "ORDP\(run)"
            let steps = Self.life(orderID)
            for (n, index) in order.enumerated() {
                try await deliver(steps[index], orderID: orderID, harness: harness, notification: run * 10 + n)
                try await harness.drain(processor)
            }
            #expect(try await harness.payment(.mercadopago, "PAY-\(orderID)") == PaymentRow(
                status: "refunded", amountMinor: 10000, currency: "BRL", refundedMinor: 10000, chargebacks: 0, reversals: 0),
                    "order \(order)")
            #expect(try await harness.text("SELECT status AS v FROM orders WHERE provider_order_id = $1", [.text(orderID)]) == "refunded")
        }
    }

    @Test("a declined order and a charged-back payment land in their canonical statuses")
    func declinedAndChargeback() async throws {
        let harness = try await ProcessingHarness.make("mp_decl")
        let processor = harness.processor()
        harness.mercadoPago.setOrder(OrderSnapshot(
            provider: .mercadopago, providerOrderID: "ORDD", amount: .test(5000, "CLP"), providerStatus: "failed",
            providerStatusDetail: "rejected_by_issuer", status: .declined,
            payments: [PaymentSnapshot(provider: .mercadopago, providerPaymentID: "PAYD", providerOrderID: "ORDD",
                                       amount: .test(5000, "CLP"), transition: .advance(.declined),
                                       statusDetail: "rejected_by_issuer", occurredAt: Self.t0)],
            updatedAt: Self.t0))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.failed", id: "ORDD", notification: 1))
        harness.mercadoPago.setPayment(Self.payment("PAYCB", order: nil, .captured, at: 1))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: "PAYCB", notification: 2))
        try await harness.drain(processor)
        harness.mercadoPago.setPayment(Self.payment("PAYCB", order: nil, .chargedBack, at: 9))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: "PAYCB", notification: 3))
        try await harness.drain(processor)
        #expect(try await harness.payment(.mercadopago, "PAYD") == PaymentRow(
            status: "declined", amountMinor: 5000, currency: "CLP", refundedMinor: 0, chargebacks: 0, reversals: 0))
        #expect(try await harness.text("SELECT status_detail AS v FROM payments WHERE provider_payment_id = 'PAYD'") == "rejected_by_issuer")
        #expect(try await harness.payment(.mercadopago, "PAYCB")?.status == "charged_back")
    }

    @Test("a saved card from a fetched payment is stored once, whatever the number of deliveries")
    func savedCard() async throws {
        let harness = try await ProcessingHarness.make("mp_card")
        harness.mercadoPago.setPayment(Self.payment("PAYT", order: nil, .captured, at: 1, card: "CARD-T"))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.created", id: "PAYT", notification: 1))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: "PAYT", notification: 2))
        try await harness.drain(harness.processor())
        #expect(try await harness.scalar("SELECT count(*) AS n FROM vault_tokens WHERE token = 'CARD-T' AND status = 'active'") == 1)
    }

    @Test("an unrecognised topic is recorded as unknown without a fetch")
    func otherTopic() async throws {
        let harness = try await ProcessingHarness.make("mp_other")
        let id = try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "subscription_preapproval", action: "updated", id: "77", notification: 1))
        try await harness.drain(harness.processor())
        #expect(try await harness.inbound(id).status == "processed")
        #expect(harness.mercadoPago.calls == 0)
        #expect(try await harness.text("SELECT data->>'provider_event_type' AS v FROM payment_events WHERE type = 'unknown'") == "subscription_preapproval")
    }
}
