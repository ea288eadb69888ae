import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

@Suite("Mercado Pago decoding")
struct MercadoPagoDecoderTests {
    @Test("order and transaction statuses map row by row", arguments: [
        ("created", String?.none, PaymentStatus?.some(.pending)),
        ("processing", "in_process", .pending),
        ("action_required", "waiting_payment", .pending),
        ("action_required", "waiting_transfer", .pending),
        ("action_required", "waiting_capture", .authorized),
        ("processed", "accredited", .captured),
        ("processed", "partially_refunded", .partiallyRefunded),
        ("processed", "refunded", .refunded),
        ("canceled", "canceled", .canceled),
        ("cancelled", nil, .canceled),
        ("failed", "insufficient_amount", .declined),
        ("failed", "rejected_by_issuer", .declined),
        ("failed", "high_risk", .declined),
        ("failed", "card_disabled", .declined),
        ("failed", "invalid_card_token", .declined),
        ("failed", "processing_error", .failed),
        ("failed", nil, .failed),
        ("failed", "failed", .failed),
        ("failed", "required_call_for_authorize", .declined),
        ("failed", "max_attempts_exceeded", .declined),
        ("failed", "cc_rejected_other_reason", .declined),
        ("expired", "expired", .expired),
        ("refunded", "refunded", .refunded),
        ("charged_back", "settled", .chargedBack),
        ("approved", nil, nil),
    ])
    func orderRow(status: String, detail: String?, expected: PaymentStatus?) {
        #expect(MercadoPagoStatusMapping.orderStatus(status, detail: detail) == expected)
    }

    @Test("classic payment statuses map row by row", arguments: [
        ("pending", String?.none, PaymentStatus?.some(.pending)),
        ("in_process", "pending_contingency", .pending),
        ("authorized", "pending_capture", .authorized),
        ("approved", "accredited", .captured),
        ("approved", "partially_refunded", .partiallyRefunded),
        ("in_mediation", nil, .captured),
        ("rejected", "cc_rejected_insufficient_amount", .declined),
        ("rejected", "cc_rejected_bad_filled_security_code", .declined),
        ("cancelled", "by_collector", .canceled),
        ("cancelled", "expired", .expired),
        ("refunded", "refunded", .refunded),
        ("charged_back", "reimbursed", .chargedBack),
        ("processed", nil, nil),
    ])
    func paymentRow(status: String, detail: String?, expected: PaymentStatus?) {
        #expect(MercadoPagoStatusMapping.paymentStatus(status, detail: detail) == expected)
    }

    @Test("payment types map to funding", arguments: [
        ("credit_card", String?.some("credit")), ("debit_card", "debit"), ("prepaid_card", "prepaid"),
        ("account_money", "account_money"), ("bank_transfer", "bank_transfer"),
    ])
    func fundingRow(type: String, expected: String?) {
        #expect(MercadoPagoStatusMapping.funding(type) == expected)
    }

    @Test("a notification decodes to its topic, action, resource and exact ids")
    func notification() throws {
        let order = try MercadoPagoNotification.decode(body: payload("mercadopago-notification-order"))
        #expect(order.topic == "order")
        #expect(order.action == "order.processed")
        #expect(order.notificationID == "123456789012345")
        #expect(order.resource == .order(id: "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"))
        #expect(order.liveMode == false)
        #expect(order.userID == "1873904477")
        let payment = try MercadoPagoNotification.decode(body: payload("mercadopago-notification-payment"))
        #expect(payment.resource == .payment(id: "104729384756"))
        let legacy = try MercadoPagoNotification.decode(body: Array(#"{"topic":"merchant_order","data":{"id":"77"}}"#.utf8))
        #expect(legacy.resource == .other(topic: "merchant_order", id: "77"))
    }

    @Test("a processed order decodes with its captured payment, exact amount and stored card")
    func processedOrder() throws {
        let order = try MercadoPagoOrderDecoder.decode(payload("mercadopago-order-processed"))
        #expect(order.providerOrderID == "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3")
        #expect(order.merchantReference == "sub-42-cycle-7")
        #expect(order.amount == (try Money(minorUnits: 10010, currency: "BRL")))
        #expect(order.providerStatus == "processed")
        #expect(order.providerStatusDetail == "accredited")
        #expect(order.status == .captured)
        #expect(order.updatedAt == Date(timeIntervalSince1970: 1_741_615_511.482))
        #expect(CanonicalEvent.order(order).type == "order.updated")
        let payment = try #require(order.payments.first)
        #expect(order.payments.count == 1)
        #expect(payment.providerPaymentID == "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4")
        #expect(payment.providerOrderID == order.providerOrderID)
        #expect(payment.status == .captured)
        #expect(payment.statusDetail == "accredited")
        #expect(payment.method == "master")
        #expect(payment.funding == "credit")
        #expect(payment.occurredAt == order.updatedAt)
        #expect(payment.refund == nil)
        let token = try #require(payment.vaultToken)
        #expect(token.token == "9120384756")
        #expect(token.customerID == "1284659970-cUsTmRk2")
        #expect(token.brand == "master")
        #expect(token.kind == .cardID, "payment_method.card_id is a card id, not a payment profile")
        #expect(token.paymentProfileID == "PP01ABC", "the profile the order charged through is kept with the card")
        #expect(!String(reflecting: order).contains("ff8080814c11e237014c1ff593b57b4d"), "one-time card tokens are not kept")
    }

    @Test("a partially refunded order reports the refunded total, skipping failed refunds")
    func partiallyRefundedOrder() throws {
        let order = try MercadoPagoOrderDecoder.decode(payload("mercadopago-order-partially-refunded"))
        let payment = try #require(order.payments.first)
        #expect(order.status == .partiallyRefunded)
        #expect(payment.status == .partiallyRefunded)
        #expect(payment.refund == .total(try Money(minorUnits: 4005, currency: "BRL")))
        var fold = PaymentFold()
        fold.apply(payment)
        fold.apply(payment)
        #expect(fold.refunded == 4005, "a total replaces, so a duplicate does not double it")
        #expect(fold.status == .partiallyRefunded)
    }

    @Test("a failed order separates issuer declines from processing errors")
    func failedOrder() throws {
        let order = try MercadoPagoOrderDecoder.decode(payload("mercadopago-order-failed"))
        #expect(order.status == .failed)
        #expect(order.payments.map(\.status) == [.declined, .failed])
        #expect(order.payments.map(\.statusDetail) == ["rejected_by_issuer", "processing_error"])
        #expect(order.payments.map(\.funding) == ["credit", "debit"])
        #expect(order.payments.map { CanonicalEvent.payment($0).type } == ["payment.declined", "payment.failed"])
    }

    @Test("an approved classic payment decodes exact number amounts and its saved card without the BIN")
    func approvedPayment() throws {
        let payment = try MercadoPagoPaymentDecoder.decode(payload("mercadopago-payment-approved"))
        #expect(payment.providerPaymentID == "104729384756")
        #expect(payment.providerOrderID == "29384756102")
        #expect(payment.account == "1873904477")
        #expect(payment.status == .captured)
        #expect(payment.amount == (try Money(minorUnits: 400_050, currency: "ARS")))
        #expect(payment.refund == .total(try Money(minorUnits: 0, currency: "ARS")))
        #expect(payment.funding == "debit")
        #expect(payment.occurredAt == Date(timeIntervalSince1970: 1_741_698_000.101))
        let token = try #require(payment.vaultToken)
        #expect(token.token == "9120384756")
        #expect(token.last4 == "0007")
        #expect(token.expiry == "11/2030")
        #expect(token.customerID == "1284659970-cUsTmRk2")
        #expect(token.kind == .cardID)
        #expect(token.paymentProfileID == nil)
        #expect(!String(reflecting: payment).contains("940000"), "the card BIN is not carried")
    }

    @Test("a rejected payment is declined with its cc_rejected detail and no token")
    func rejectedPayment() throws {
        let payment = try MercadoPagoPaymentDecoder.decode(payload("mercadopago-payment-rejected"))
        #expect(payment.status == .declined)
        #expect(payment.statusDetail == "cc_rejected_insufficient_amount")
        #expect(payment.vaultToken == nil, "a card without an id is not stored")
        #expect(CanonicalEvent.payment(payment).type == "payment.declined")
    }

    @Test("a refunded payment carries its refunded total")
    func refundedPayment() throws {
        let payment = try MercadoPagoPaymentDecoder.decode(payload("mercadopago-payment-refunded"))
        #expect(payment.status == .refunded)
        #expect(payment.refund == .total(try Money(minorUnits: 400_050, currency: "ARS")))
        var fold = PaymentFold(status: .captured)
        fold.apply(payment)
        #expect(fold.status == .refunded)
    }

    enum Decoder: String, Sendable { case notification, order, payment }

    @Test("malformed bodies, missing fields and unknown fetched statuses throw a PayloadError", arguments: [
        (Decoder.notification, "{", PayloadError(provider: .mercadopago, code: .malformedJSON)),
        (.notification, #"{"type":"payment","data":{}}"#, PayloadError(provider: .mercadopago, code: .missingField, field: "data.id")),
        (.notification, #"{"data":{"id":"1"}}"#, PayloadError(provider: .mercadopago, code: .missingField, field: "type")),
        (.order, #"{"status":"processed"}"#, PayloadError(provider: .mercadopago, code: .missingField, field: "id")),
        (.order, #"{"id":"O","status":"processed","currency":"BRL","transactions":{"payments":[{"id":"P","status":"teleported"}]}}"#,
         PayloadError(provider: .mercadopago, code: .unrecognizedValue, field: "transactions.payments[0].status")),
        (.order, #"{"id":"O","status":"processed","total_amount":"10.00"}"#,
         PayloadError(provider: .mercadopago, code: .unknownCurrency, field: "country_code")),
        (.order, #"{"id":"O","status":"processed","currency":"BRL","total_amount":"10.001"}"#,
         PayloadError(provider: .mercadopago, code: .unrepresentableAmount, field: "total_amount")),
        (.order, #"{"id":"O","status":"processed","currency":"BRL","total_amount":"ten"}"#,
         PayloadError(provider: .mercadopago, code: .invalidField, field: "total_amount")),
        (.payment, #"{"id":1,"status":"approved","currency_id":"ARS","transaction_amount":1e3}"#,
         PayloadError(provider: .mercadopago, code: .invalidField, field: "transaction_amount")),
        (.payment, #"{"id":1}"#, PayloadError(provider: .mercadopago, code: .missingField, field: "status")),
        (.payment, #"{"id":1,"status":"approved","card":{"id":["x"]}}"#,
         PayloadError(provider: .mercadopago, code: .invalidField, field: "card.id")),
    ])
    func errors(decoder: Decoder, body: String, expected: PayloadError) {
        let bytes = Array(body.utf8)
        #expect(throws: expected) {
            switch decoder {
            case .notification: _ = try MercadoPagoNotification.decode(body: bytes)
            case .order: _ = try MercadoPagoOrderDecoder.decode(bytes)
            case .payment: _ = try MercadoPagoPaymentDecoder.decode(bytes)
            }
        }
    }
}
