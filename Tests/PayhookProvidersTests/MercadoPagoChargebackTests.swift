import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

/// Chargebacks on Mercado Pago orders and payments (fixtures `mercadopago-order-charged-back`,
/// `mercadopago-notification-chargeback-*`; sources in docs/providers.md).
@Suite("Mercado Pago chargebacks")
struct MercadoPagoChargebackTests {
    @Test("an order charged back names its payment in transactions.chargebacks: that payment is charged_back")
    func orderChargeback() throws {
        let order = try MercadoPagoOrderDecoder.decode(payload("mercadopago-order-charged-back"))
        #expect(order.status == .chargedBack)
        let payment = try #require(order.payments.first)
        #expect(payment.providerPaymentID == "PAY01JRTXT3GC8CJGW394QZZ349N6")
        #expect(payment.status == .chargedBack, "the payment still reads processed; the order's chargeback names it")
        #expect(payment.amount == (try Money(minorUnits: 20000, currency: "BRL")))
        #expect(CanonicalEvent.payment(payment).type == "payment.charged_back")
    }

    @Test("a chargeback names only its own payment; an order that is not charged back keeps its payments' words")
    func onlyNamedPayment() throws {
        var text = String(decoding: try payload("mercadopago-order-charged-back"), as: UTF8.self)
        // A second payment of the order, which no chargeback names: the first payment's object
        // is closed early and the second one takes over its closing brace.
        let method = #""payment_method": { "id": "master", "type": "credit_card", "installments": 1 }"#
        let second = #"\#(method) }, {"id":"PAY-OTHER","amount":"50.00","status":"processed","status_detail":"accredited""#
        text = text.replacingOccurrences(of: method, with: second)
        let order = try MercadoPagoOrderDecoder.decode(Array(text.utf8))
        #expect(order.payments.map(\.status) == [.chargedBack, .captured])

        let open = text.replacingOccurrences(of: #""status": "charged_back""#, with: #""status": "processed""#)
        let notChargedBack = try MercadoPagoOrderDecoder.decode(Array(open.utf8))
        #expect(notChargedBack.payments.map(\.status) == [.captured, .captured])
    }

    @Test("an Orders chargeback notification points at the order; a classic one at its payment_id")
    func notifications() throws {
        let order = try MercadoPagoNotification.decode(body: payload("mercadopago-notification-chargeback-order"))
        #expect(order.action == "order.charged_back")
        #expect(order.resource == .order(id: "ORD01JRTXT3GC8CJGW394QWYQ9VP3"))
        let classic = try MercadoPagoNotification.decode(body: payload("mercadopago-notification-chargeback-payment"))
        #expect(classic.topic == "topic_chargebacks_wh")
        #expect(classic.resource == .payment(id: "81968653106"))
        let chargebacksTopic = try MercadoPagoNotification.decode(body: Array(
            #"{"type":"chargebacks","action":"order.charged_back","data":{"id":"ORD1"}}"#.utf8))
        #expect(chargebacksTopic.resource == .order(id: "ORD1"))
        let nothingToFetch = try MercadoPagoNotification.decode(body: Array(#"{"type":"topic_chargebacks_wh","data":{"id":"9"}}"#.utf8))
        #expect(nothingToFetch.resource == .other(topic: "topic_chargebacks_wh", id: "9"))
    }
}
