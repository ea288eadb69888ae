import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookProcessing

/// One merchant order, several Mercado Pago orders: each checkout attempt is its own Mercado Pago
/// order carrying the same `external_reference` (the failed and the paid attempt of the corpus
/// case `mercadopago/failed-then-paid-same-reference.json`, whose bodies these are; sources
/// there). Every provider order with the reference links to the registered order, fulfillment
/// counts the paid one, and no delivery is dead-lettered for sharing the reference.
@Suite("Mercado Pago: several provider orders per merchant reference", .timeLimit(.minutes(5)))
struct MercadoPagoOrdersPerReferenceTests {
    static let failedID = "ORD01RETRYA00000000000000000000"
    static let paidID = "ORD01RETRYB00000000000000000000"

    static func order(_ id: String, payment: String, paid: Bool) -> String {
        """
        {"id":"\(id)","type":"online","processing_mode":"automatic","external_reference":"mp-retry-1",
         "total_amount":"200.00","total_paid_amount":"\(paid ? "200.00" : "0.00")","country_code":"ARG","user_id":"1245621468",
         "status":"\(paid ? "processed" : "failed")","status_detail":"\(paid ? "accredited" : "failed")","capture_mode":"automatic",
         "created_date":"2025-03-10T14:05:09.120Z","last_updated_date":"2025-03-10T14:0\(paid ? 9 : 5):11.482Z",
         "transactions":{"payments":[{"id":"\(payment)","amount":"200.00","paid_amount":"\(paid ? "200.00" : "0.00")",
           "status":"\(paid ? "processed" : "failed")","status_detail":"\(paid ? "accredited" : "rejected_by_issuer")",
           "payment_method":{"id":"master","type":"credit_card","installments":1}}]}}
        """
    }

    static let registration = #"{"provider": "mercadopago", "merchant_reference": "mp-retry-1", "amount": {"value": 20000, "currency": "ARS"}}"#

    private func deliver(_ harness: FulfillmentHarness, _ processor: InboundEventProcessor, paid: Bool, notification: Int) async throws {
        let id = paid ? Self.paidID : Self.failedID
        let payment = paid ? "PAY01RETRYB00000000000000000000" : "PAY01RETRYA00000000000000000000"
        harness.processing.mercadoPago.setOrder(try MercadoPagoOrderDecoder.decode(Array(Self.order(id, payment: payment, paid: paid).utf8)))
        try await harness.processing.insert(.mercadopago, Bodies.mercadoPago(
            type: "order", action: paid ? "order.processed" : "order.failed", id: id, notification: notification))
        try await harness.processing.drain(processor)
    }

    private func fulfilled(_ harness: FulfillmentHarness, _ orderID: Int64) async throws -> Bool {
        let (worker, task) = try harness.startWorker(name: "w")
        let reached = await eventually(timeout: .seconds(30)) {
            (try? await harness.order(orderID).fulfillmentStatus) == "fulfilled"
        }
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value
        return reached
    }

    private func deadLetters(_ harness: FulfillmentHarness) async throws -> Int64 {
        try await harness.processing.scalar("SELECT count(*) AS n FROM dead_letters")
    }

    @Test("an order registered by reference before payment links the failed and the paid Mercado Pago order, and is fulfilled by the paid one")
    func registeredFirst() async throws {
        let harness = try await FulfillmentHarness.make("mp_refs_registered_first")
        defer { harness.endpoint.stop() }
        let registered = try await harness.register(Self.registration)
        let processor = harness.processor()
        try await deliver(harness, processor, paid: false, notification: 1)
        try await deliver(harness, processor, paid: true, notification: 2)
        #expect(try await fulfilled(harness, registered.id))
        let order = try await harness.order(registered.id)
        #expect(order.payments.map(\.status).sorted() == ["captured", "declined"])
        #expect(order.providerOrders.compactMap(\.providerOrderID).sorted() == [Self.failedID, Self.paidID])
        #expect(try await harness.processing.scalar(
            "SELECT count(*) AS n FROM orders WHERE merchant_reference = 'mp-retry-1' AND merchant_order_id = \(registered.id)") == 2)
        #expect(harness.endpoint.received.count == 1)
        #expect(try await deadLetters(harness) == 0)
    }

    @Test("registering with the reference and the paid order's id after a failed attempt names the paid order, links the failed one, and fulfills")
    func registeredWithBothIDsAfterFailedAttempt() async throws {
        let harness = try await FulfillmentHarness.make("mp_refs_both_ids")
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        try await deliver(harness, processor, paid: false, notification: 1)
        let registered = try await harness.register("""
            {"provider": "mercadopago", "merchant_reference": "mp-retry-1", "provider_order_id": "\(Self.paidID)",
             "amount": {"value": 20000, "currency": "ARS"}}
            """)
        #expect(registered.providerOrderID == Self.paidID)
        try await deliver(harness, processor, paid: true, notification: 2)
        #expect(try await fulfilled(harness, registered.id))
        #expect(try await harness.order(registered.id).providerOrders.map(\.providerOrderID) == [Self.failedID])
        #expect(try await deadLetters(harness) == 0)
    }

    @Test("an order registered by reference after both attempts arrived links both and is fulfilled")
    func registeredLast() async throws {
        let harness = try await FulfillmentHarness.make("mp_refs_registered_last")
        defer { harness.endpoint.stop() }
        let processor = harness.processor()
        try await deliver(harness, processor, paid: false, notification: 1)
        try await deliver(harness, processor, paid: true, notification: 2)
        #expect(try await harness.processing.scalar(
            "SELECT count(*) AS n FROM orders WHERE merchant_reference = 'mp-retry-1'") == 2)
        let registered = try await harness.register(Self.registration)
        #expect(try await fulfilled(harness, registered.id))
        #expect(try await deadLetters(harness) == 0)
    }

    @Test("a reference reported on a provider order created without one, while another provider order holds it, is stored and links; nothing is dead-lettered")
    func referenceArrivesOnBareRow() async throws {
        let harness = try await FulfillmentHarness.make("mp_refs_bare_row")
        defer { harness.endpoint.stop() }
        let registered = try await harness.register(Self.registration)
        let processor = harness.processor()
        try await deliver(harness, processor, paid: false, notification: 1)
        // A payment named the paid order before the order itself was fetched: its row has no reference yet.
        try await harness.pool.query("INSERT INTO orders (provider, account, provider_order_id, status) VALUES ('mercadopago', '', $1, 'created')",
                                     [.text(Self.paidID)])
        try await deliver(harness, processor, paid: true, notification: 2)
        #expect(try await deadLetters(harness) == 0)
        #expect(try await harness.processing.text(
            "SELECT merchant_reference AS v FROM orders WHERE provider_order_id = '\(Self.paidID)'") == "mp-retry-1")
        #expect(try await fulfilled(harness, registered.id))
    }
}
