import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

@Suite("Adyen event decoding")
struct AdyenEventDecoderTests {
    @Test("each event code and success flag maps to its row of the table", arguments: [
        ("AUTHORISATION", true, AdyenEventMapping.Meaning?.some(.status(.advance(.authorized)))),
        ("AUTHORISATION", false, .status(.advance(.declined))),
        ("CAPTURE", true, .capture),
        ("CAPTURE", false, .status(.modificationRefused)),
        ("CAPTURE_FAILED", true, .captureFailed),
        ("AUTHORISATION_ADJUSTMENT", true, .authorisationAdjustment),
        ("AUTHORISATION_ADJUSTMENT", false, .status(.modificationRefused)),
        ("CANCELLATION", true, .status(.advance(.canceled))),
        ("CANCELLATION", false, .status(.modificationRefused)),
        ("TECHNICAL_CANCEL", true, .status(.advance(.canceled))),
        ("CANCEL_OR_REFUND", true, .cancelOrRefund),
        ("CANCEL_OR_REFUND", false, .status(.modificationRefused)),
        ("REFUND", true, .refund),
        ("REFUND", false, .status(.modificationRefused)),
        ("REFUND_FAILED", true, .refundFailed),
        ("CHARGEBACK", true, .status(.advance(.chargedBack))),
        ("CHARGEBACK_REVERSED", true, .status(.chargebackReversed)),
        ("SECOND_CHARGEBACK", true, .status(.advance(.chargedBack))),
        ("PREARBITRATION_LOST", true, .status(.advance(.chargedBack))),
        ("PREARBITRATION_WON", true, .status(.chargebackReversed)),
        ("NOTIFICATION_OF_CHARGEBACK", true, .status(.notice)),
        ("REQUEST_FOR_INFORMATION", true, .status(.notice)),
        ("REFUNDED_REVERSED", true, .refundFailed),
        ("OFFER_CLOSED", true, .status(.advance(.expired))),
        ("RECURRING_CONTRACT", true, .recurringContract),
        ("RECURRING_CONTRACT", false, nil),
        ("PENDING", true, .status(.advance(.pending))),
        ("EXPIRE", true, .status(.advance(.expired))),
        ("REPORT_AVAILABLE", true, nil),
        ("authorisation", true, nil),
    ])
    func mappingRow(code: String, success: Bool, expected: AdyenEventMapping.Meaning?) {
        #expect(AdyenEventMapping.meaning(eventCode: code, success: success) == expected)
    }

    @Test("tokenization webhook types map to a change and a status", arguments: [
        ("recurring.token.created", VaultTokenChange?.some(.created), VaultTokenStatus?.some(.active)),
        ("recurring.token.updated", .updated, .active),
        ("recurring.token.alreadyExisting", .updated, .active),
        ("recurring.token.disabled", .disabled, .disabled),
        ("recurring.token.somethingNew", nil, nil),
    ])
    func tokenRow(type: String, change: VaultTokenChange?, status: VaultTokenStatus?) {
        let mapped = AdyenEventMapping.tokenWebhook(type: type)
        #expect(mapped?.change == change)
        #expect(mapped?.status == status)
    }

    @Test("a tokenised authorisation decodes to an authorized payment carrying its vault token")
    func authorisation() throws {
        let events = try AdyenEventDecoder.decode(body: payload("adyen-authorisation-tokenized"))
        #expect(events.count == 1)
        let payment = try #require(events.first?.paymentSnapshot)
        #expect(events.first?.type == "payment.authorized")
        #expect(payment.providerPaymentID == "QFQTPCQ8HXSKGK82")
        #expect(payment.account == "PayhookShopEU")
        #expect(payment.merchantReference == "order-1143")
        #expect(payment.amount == (try Money(minorUnits: 10010, currency: "EUR")))
        #expect(payment.status == .authorized)
        #expect(payment.statusDetail == nil)
        #expect(payment.method == "mc")
        #expect(payment.funding == "credit")
        #expect(payment.providerStatus == "AUTHORISATION")
        #expect(payment.occurredAt == Date(timeIntervalSince1970: 1_740_406_856))
        let token = try #require(payment.vaultToken)
        #expect(token.token == "M5N7TQ4TG5PFWR50")
        #expect(token.shopperReference == "shopper-7781")
        #expect(token.brand == "mc")
        #expect(token.last4 == "0007")
        #expect(token.expiry == "03/2030")
        #expect(token.status == .active)
    }

    @Test("authorise, capture, partial refund and final refund end refunded, whatever the order")
    func fullLife() throws {
        let names = ["adyen-authorisation-tokenized", "adyen-capture", "adyen-refund-partial", "adyen-refund-rest"]
        let events = try names.flatMap { try AdyenEventDecoder.decode(body: payload($0)) }
        #expect(events.map(\.type) == ["payment.authorized", "payment.captured", "payment.refunded", "payment.refunded"])
        let payments = events.compactMap(\.paymentSnapshot)
        #expect(Set(payments.map(\.providerPaymentID)) == ["QFQTPCQ8HXSKGK82"])
        #expect(payments[1].modificationAmount == (try Money(minorUnits: 10010, currency: "EUR")))
        #expect(payments[2].refund == .increment(reference: "RF00000000000001", amount: try Money(minorUnits: 4000, currency: "EUR")))

        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2, 3, 2]] {
            var fold = PaymentFold()
            for index in order { fold.apply(payments[index]) }
            #expect(fold.status == .refunded, "order \(order)")
            #expect(fold.refunded == 10010)
        }
        var partial = PaymentFold()
        for index in [0, 1, 2, 2] { partial.apply(payments[index]) }
        #expect(partial.status == .partiallyRefunded)
        #expect(partial.refunded == 4000, "a duplicate refund increment is counted once")
    }

    @Test("a refused authorisation is a declined payment with Adyen's reason, in whole yen")
    func declined() throws {
        let events = try AdyenEventDecoder.decode(body: payload("adyen-authorisation-refused"))
        let payment = try #require(events.first?.paymentSnapshot)
        #expect(events.first?.type == "payment.declined")
        #expect(payment.status == .declined)
        #expect(payment.statusDetail == "Not enough balance")
        #expect(payment.amount == (try Money(minorUnits: 1500, currency: "JPY")))
        #expect(payment.amount?.decimalString == "1500")
        #expect(payment.vaultToken == nil)
    }

    @Test("a chargeback and its reversal decode to charged_back and the explicit reversal, in fils")
    func dispute() throws {
        let events = try AdyenEventDecoder.decode(body: payload("adyen-dispute"))
        #expect(events.map(\.type) == ["payment.charged_back", "payment.chargeback_reversed"])
        let chargeback = try #require(events[0].paymentSnapshot)
        #expect(chargeback.providerPaymentID == "CB0RIGINAL000001")
        #expect(chargeback.modificationAmount?.decimalString == "12.345")
        #expect(chargeback.statusDetail == "Other Fraud-Card Absent Environment")
        var fold = PaymentFold(status: .captured)
        fold.apply(chargeback)
        #expect(fold.status == .chargedBack)
        fold.apply(try #require(events[1].paymentSnapshot))
        #expect(fold.status == .captured)
    }

    @Test("a token created then disabled decodes to token.created and token.disabled")
    func tokenLifecycle() throws {
        let created = try AdyenEventDecoder.decode(body: payload("adyen-token-created"))
        let disabled = try AdyenEventDecoder.decode(body: payload("adyen-token-disabled"))
        guard case .vaultToken(let token, .created)? = created.first else {
            Issue.record("expected a created token")
            return
        }
        #expect(token.token == "M5N7TQ4TG5PFWR50")
        #expect(token.shopperReference == "shopper-7781")
        #expect(token.account == "PayhookShopEU")
        #expect(token.brand == nil, "`scheme` is a family, not a brand")
        #expect(token.status == .active)
        #expect(disabled.map(\.type) == ["token.disabled"])
        guard case .vaultToken(let gone, _)? = disabled.first else { return }
        #expect(gone.status == .disabled)
        #expect(gone.token == token.token)
    }

    @Test("unknown event codes and webhook types are stored as unknown, never errors")
    func unknownCodes() throws {
        let events = try AdyenEventDecoder.decode(body: payload("adyen-mixed-codes"))
        #expect(events.map(\.type) == ["unknown", "payment.pending", "unknown"])
        #expect(events[0] == .unknown(provider: .adyen, eventType: "REPORT_AVAILABLE", reference: "REPORT0000000001"))
        #expect(events[2] == .unknown(provider: .adyen, eventType: "AUTORESCUE", reference: "RESCUE0000000001"))
        let other = try AdyenEventDecoder.decode(body: Array(#"{"type":"balancePlatform.accountHolder.updated","eventId":"E1"}"#.utf8))
        #expect(other == [.unknown(provider: .adyen, eventType: "balancePlatform.accountHolder.updated", reference: "E1")])
    }

    @Test("card numbers in any field never survive decoding")
    func cardDataDropped() throws {
        let events = try AdyenEventDecoder.decode(body: payload("adyen-card-data-leak"))
        #expect(events.count == 2)
        #expect(!mentionsSyntheticPAN(events))
        let first = try #require(events[0].paymentSnapshot)
        #expect(first.merchantReference == nil)
        #expect(first.vaultToken?.token == "LEAKTEST00000001")
        #expect(first.vaultToken?.last4 == nil)
        #expect(first.vaultToken?.shopperReference == nil)
        #expect(try #require(events[1].paymentSnapshot).statusDetail == nil)
    }

    @Test("refund, cancel-or-refund and failure items carry their refund shapes")
    func refundShapes() throws {
        func item(_ code: String, action: String? = nil, success: String = "true") -> [UInt8] {
            let extra = action.map { #""modification.action":"\#($0)""# } ?? ""
            return Array(#"""
            {"notificationItems":[{"NotificationRequestItem":{"additionalData":{\#(extra)},"amount":{"currency":"EUR","value":500},
            "eventCode":"\#(code)","originalReference":"ORIG","pspReference":"MOD1","success":"\#(success)","reason":"Insufficient balance"}}]}
            """#.utf8)
        }
        let five = try Money(minorUnits: 500, currency: "EUR")
        let refund = try #require(try AdyenEventDecoder.decode(body: item("CANCEL_OR_REFUND", action: "refund"))[0].paymentSnapshot)
        #expect(refund.refund == .increment(reference: "MOD1", amount: five))
        #expect(refund.providerPaymentID == "ORIG")
        let cancel = try #require(try AdyenEventDecoder.decode(body: item("CANCEL_OR_REFUND", action: "cancel"))[0].paymentSnapshot)
        #expect(cancel.status == .canceled && cancel.refund == nil)
        let failed = try #require(try AdyenEventDecoder.decode(body: item("REFUND_FAILED"))[0].paymentSnapshot)
        #expect(failed.transition == .refundFailed && failed.refund == .failed(reference: "MOD1"))
        let refused = try #require(try AdyenEventDecoder.decode(body: item("CAPTURE", success: "false"))[0].paymentSnapshot)
        #expect(refused.transition == .modificationRefused && refused.statusDetail == "Insufficient balance")
        let captureFailed = try AdyenEventDecoder.decode(body: item("CAPTURE_FAILED"))
        #expect(captureFailed.map(\.type) == ["payment.capture_failed"])
    }

    @Test("malformed bodies and missing fields throw a PayloadError naming the field", arguments: [
        ("not json", PayloadError(provider: .adyen, code: .malformedJSON)),
        ("[1,2]", PayloadError(provider: .adyen, code: .malformedJSON)),
        (#"{"live":"false"}"#, PayloadError(provider: .adyen, code: .missingField, field: "notificationItems")),
        (#"{"notificationItems":[{"Other":{}}]}"#,
         PayloadError(provider: .adyen, code: .missingField, field: "notificationItems[0].NotificationRequestItem")),
        (#"{"notificationItems":[{"NotificationRequestItem":{"eventCode":"CAPTURE","success":"true"}}]}"#,
         PayloadError(provider: .adyen, code: .missingField, field: "notificationItems[0].NotificationRequestItem.pspReference")),
        (#"{"notificationItems":[{"NotificationRequestItem":{"pspReference":"P","eventCode":"REFUND","success":"true"}}]}"#,
         PayloadError(provider: .adyen, code: .missingField, field: "notificationItems[0].NotificationRequestItem.amount.value")),
        (#"{"notificationItems":[{"NotificationRequestItem":{"pspReference":"P","eventCode":"CAPTURE","success":"maybe"}}]}"#,
         PayloadError(provider: .adyen, code: .invalidField, field: "notificationItems[0].NotificationRequestItem.success")),
        (#"{"notificationItems":[{"NotificationRequestItem":{"pspReference":"P","eventCode":"CAPTURE","success":"true","amount":{"currency":"EUR","value":10.5}}}]}"#,
         PayloadError(provider: .adyen, code: .invalidField, field: "notificationItems[0].NotificationRequestItem.amount.value")),
        (#"{"type":"recurring.token.created","data":{"shopperReference":"S"}}"#,
         PayloadError(provider: .adyen, code: .missingField, field: "data.storedPaymentMethodId")),
    ])
    func errors(body: String, expected: PayloadError) {
        #expect(throws: expected) { try AdyenEventDecoder.decode(body: Array(body.utf8)) }
    }
}
