import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookProcessing

/// A Mercado Pago order paid, then charged back, in the shape Mercado Pago documents
/// (`country_code`, no `currency`; the chargeback in `transactions.chargebacks[]`; sources in
/// docs/providers.md): the merchant hears `order.paid`, then `order.charged_back`, as for Adyen.
@Suite("Mercado Pago chargebacks reach the merchant", .timeLimit(.minutes(5)))
struct MercadoPagoChargebackFulfillmentTests {
    static func order(status: String, detail: String, chargebacks: String = "") -> String {
        """
        {"id":"ORDCB1","type":"online","processing_mode":"automatic","external_reference":"order-cb-1",
         "total_amount":"200.00","total_paid_amount":"200.00","country_code":"BRA","user_id":"1873904477",
         "status":"\(status)","status_detail":"\(detail)","last_updated_date":"2025-05-02T09:41:2\(chargebacks.isEmpty ? 0 : 7).481Z",
         "transactions":{"payments":[{"id":"PAYCB1","amount":"200.00","paid_amount":"200.00","status":"processed",
           "status_detail":"accredited","payment_method":{"id":"master","type":"credit_card"}}]\(chargebacks)}}
        """
    }

    @Test("an order processed, then charged back: payment charged_back, order.paid then order.charged_back")
    func chargedBackAfterPaid() async throws {
        let harness = try await FulfillmentHarness.make("mp_chargeback")
        defer { harness.endpoint.stop() }
        let registered = try await harness.register("""
            {"provider": "mercadopago", "merchant_reference": "order-cb-1", "provider_order_id": "ORDCB1",
             "amount": {"value": 20000, "currency": "BRL"}}
            """)
        let processor = harness.processor()
        harness.processing.mercadoPago.setOrder(try MercadoPagoOrderDecoder.decode(Array(Self.order(status: "processed", detail: "accredited").utf8)))
        try await harness.processing.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORDCB1", notification: 1))
        try await harness.processing.drain(processor)
        let (worker, task) = try harness.startWorker(name: "w")
        let paid = await eventually(timeout: .seconds(60)) {
            (try? await harness.order(registered.id).fulfillmentStatus) == "fulfilled"
        }

        let chargeback = #","chargebacks":[{"id":"CHB1","transaction_id":"PAYCB1","case_id":"2330001","status":"opened","references":[]}]"#
        harness.processing.mercadoPago.setOrder(try MercadoPagoOrderDecoder.decode(Array(
            Self.order(status: "charged_back", detail: "settled", chargebacks: chargeback).utf8)))
        try await harness.processing.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.charged_back", id: "ORDCB1", notification: 2))
        try await harness.processing.drain(processor)
        let told = await eventually(timeout: .seconds(60)) { harness.endpoint.received.count >= 2 }
        #expect(await harness.quietQueue())
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value

        #expect(paid)
        #expect(told)
        #expect(try await harness.processing.text("SELECT status AS v FROM payments WHERE provider_payment_id = 'PAYCB1'") == "charged_back")
        let types = harness.endpoint.received.compactMap { received in
            String(decoding: received.body, as: UTF8.self).split(separator: "\"").dropFirst(3).first.map(String.init)
        }
        #expect(types == ["order.paid", "order.charged_back"])
    }
}
