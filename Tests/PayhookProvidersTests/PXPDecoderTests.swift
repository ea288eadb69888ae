import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

@Suite("PXP decoding")
struct PXPDecoderTests {
    @Test("transaction states map row by row", arguments: [
        ("Authorised", PaymentStatus?.some(.authorized)),
        ("Captured", .captured),
        ("Cancelled", .canceled),
        ("Refused", .declined),
        ("Error", .failed),
        ("Pending", .pending),
        ("Rejected", .declined),
        ("Refunded", .refunded),
        ("Executed", .captured),
        ("Confirmed", .captured),
        ("Approved", .authorized),
        ("Updated", .authorized),
        ("authorised", nil),
        ("Teleported", nil),
    ])
    func stateRow(state: String, expected: PaymentStatus?) {
        #expect(PXPStateMapping.paymentStatus(state) == expected)
    }

    @Test("token statuses map row by row", arguments: [
        (String?.none, VaultTokenStatus?.some(.active), VaultTokenChange?.some(.updated)),
        ("Active", .active, .updated),
        ("ACTIVE", .active, .updated),
        ("Disabled", .disabled, .disabled),
        ("Deleted", .disabled, .disabled),
        ("Expired", .expired, .expired),
        ("Frozen", nil, nil),
    ])
    func tokenRow(status: String?, expected: VaultTokenStatus?, change: VaultTokenChange?) {
        let mapped = PXPStateMapping.tokenStatus(status)
        #expect(mapped?.0 == expected)
        #expect(mapped?.1 == change)
    }

    @Test("an authorised transaction webhook decodes its envelope and a provisional payment")
    func authorised() throws {
        let notification = try PXPEventDecoder.decode(body: payload("pxp-transaction-authorised"))
        #expect(notification.category == "Transaction")
        #expect(notification.state == "Authorised")
        #expect(notification.systemTransactionID == "1ed768bb-e88a-4636-91ae-67927ccbb02b")
        #expect(notification.merchantTransactionID == "sub-77-cycle-3")
        #expect(notification.owner == PXPNotification.Owner(merchantGroup: "PAYHOOK-GRP", merchant: "PAYHOOK-1", site: "SITE-EU"))
        let eventDate = try #require(notification.eventDate)
        #expect(abs(eventDate.timeIntervalSince1970 - 1_747_731_064.8264455) < 0.000_01)
        let payment = try #require(notification.event.paymentSnapshot)
        #expect(notification.event.type == "payment.authorized")
        #expect(payment.providerPaymentID == "1ed768bb-e88a-4636-91ae-67927ccbb02b")
        #expect(payment.merchantReference == "sub-77-cycle-3")
        #expect(payment.account == "PAYHOOK-1")
        #expect(payment.amount == (try Money(minorUnits: 10010, currency: "EUR")))
        #expect(payment.funding == "card")
        #expect(payment.statusDetail == "CRD000")
        #expect(payment.occurredAt == notification.eventDate)
    }

    @Test("captured and refused webhooks read amounts from number text, exactly")
    func capturedAndRefused() throws {
        let captured = try PXPEventDecoder.decode(body: payload("pxp-transaction-captured")).event.paymentSnapshot
        #expect(captured?.status == .captured)
        #expect(captured?.amount == (try Money(minorUnits: 10010, currency: "EUR")))
        let refused = try PXPEventDecoder.decode(body: payload("pxp-transaction-refused"))
        #expect(refused.event.type == "payment.declined")
        #expect(refused.event.paymentSnapshot?.amount == (try Money(minorUnits: 1500, currency: "JPY")))
        #expect(refused.event.paymentSnapshot?.statusDetail == "CRD105")
    }

    @Test("a fetched transaction decodes to the same payment the webhook announced")
    func fetched() throws {
        let payment = try PXPTransactionDecoder.decode(payload("pxp-transaction-get"))
        #expect(payment.providerPaymentID == "1ed768bb-e88a-4636-91ae-67927ccbb02b")
        #expect(payment.status == .captured)
        #expect(payment.account == "PAYHOOK-1")
        #expect(payment.amount == (try Money(minorUnits: 10010, currency: "EUR")))
        #expect(payment.statusDetail == "Transaction Captured")
        #expect(payment.funding == "card")
    }

    @Test("every state of PXP's enum decodes to a payment with the stateData code as detail; other categories are unknown")
    func wholeEnum() throws {
        let executed = try PXPEventDecoder.decode(body: payload("pxp-transaction-executed"))
        guard case .payment(let payment) = executed.event else {
            Issue.record("Executed is a state of PXP's enum, decoded as a payment")
            return
        }
        #expect(payment.status == .captured)
        #expect(payment.providerStatus == "Executed")
        for state in ["Authorised", "Refused", "Cancelled", "Captured", "Error", "Executed", "Confirmed", "Pending",
                      "Refunded", "Updated", "Rejected", "Approved"] {
            let body = #"{"eventCategory":"Transaction","eventData":{"state":"\#(state)","systemTransactionId":"S","stateData":{"code":"CRD105"}}}"#
            let decoded = try PXPEventDecoder.decode(body: Array(body.utf8))
            guard case .payment(let snapshot) = decoded.event else {
                Issue.record("\(state) is not a payment")
                continue
            }
            #expect(snapshot.status == PXPStateMapping.paymentStatus(state))
            #expect(snapshot.statusDetail == "CRD105")
        }
        let reporting = try PXPEventDecoder.decode(body: payload("pxp-reporting"))
        #expect(reporting.event == .unknown(provider: .pxp, eventType: "Reporting", reference: nil))
        #expect(reporting.owner?.merchantGroup == "PAYHOOK-GRP")
    }

    @Test("a transaction state outside PXP's enum is an error to retry, never a guess")
    func unknownState() {
        let body = #"{"eventCategory":"Transaction","eventData":{"state":"Teleported","systemTransactionId":"S"}}"#
        #expect(throws: PayloadError(provider: .pxp, code: .unrecognizedValue, field: "eventData.state")) {
            try PXPEventDecoder.decode(body: Array(body.utf8))
        }
    }

    @Test("a token event keeps the token, masked last four and expiry, never the scheme token number")
    func token() throws {
        let notification = try PXPEventDecoder.decode(body: payload("pxp-token-active"))
        guard case .vaultToken(let token, let change) = notification.event else {
            Issue.record("expected a vault token")
            return
        }
        #expect(change == .updated)
        #expect(token.token == "7f46c09d-d1d1-4f94-9a88-6e8ac32e6341")
        #expect(token.last4 == "0007")
        #expect(token.expiry == "04/2030")
        #expect(token.brand == "Visa")
        #expect(token.status == .active)
        #expect(token.account == "PAYHOOK-1")
        #expect(!mentionsSyntheticPAN(notification))
    }

    @Test("an unmasked card number in a token event is dropped entirely, with the security code")
    func unmaskedToken() throws {
        let notification = try PXPEventDecoder.decode(body: payload("pxp-token-unmasked"))
        guard case .vaultToken(let token, .disabled) = notification.event else {
            Issue.record("expected a disabled vault token")
            return
        }
        #expect(token.last4 == nil)
        #expect(token.status == .disabled)
        #expect(!mentionsSyntheticPAN(notification))
        #expect(!String(reflecting: notification).contains("123"))
    }

    @Test("masked card numbers yield last four only when really masked", arguments: [
        ("940000******0007", String?.some("0007")), ("9400 00XX XXXX 0007", "0007"), (syntheticPAN, nil),
        ("****", nil), ("940000******000A", nil),
    ])
    func maskedLast4(masked: String, expected: String?) {
        #expect(PXPEventDecoder.maskedLast4(masked) == expected)
    }

    enum Decoder: String, Sendable { case event, transaction }

    @Test("malformed bodies and missing fields throw a PayloadError naming the field", arguments: [
        (Decoder.event, "nope", PayloadError(provider: .pxp, code: .malformedJSON)),
        (.event, #"{"eventData":{}}"#, PayloadError(provider: .pxp, code: .missingField, field: "eventCategory")),
        (.event, #"{"eventCategory":"Transaction"}"#, PayloadError(provider: .pxp, code: .missingField, field: "eventData")),
        (.event, #"{"eventCategory":"Transaction","eventData":{"systemTransactionId":"S"}}"#,
         PayloadError(provider: .pxp, code: .missingField, field: "eventData.state")),
        (.event, #"{"eventCategory":"Transaction","eventData":{"state":"Captured"}}"#,
         PayloadError(provider: .pxp, code: .missingField, field: "eventData.systemTransactionId")),
        (.event, #"{"eventCategory":"Token","eventData":{"status":"Active"}}"#,
         PayloadError(provider: .pxp, code: .missingField, field: "eventData.gatewayTokenId")),
        (.transaction, #"{"systemTransactionId":"S","state":"Teleported"}"#,
         PayloadError(provider: .pxp, code: .unrecognizedValue, field: "state")),
        (.transaction, #"{"systemTransactionId":"S","state":"Captured","amounts":{"transactionValue":"1.005","currencyCode":"EUR"}}"#,
         PayloadError(provider: .pxp, code: .invalidField, field: "amounts.transactionValue")),
    ])
    func errors(decoder: Decoder, body: String, expected: PayloadError) {
        let bytes = Array(body.utf8)
        #expect(throws: expected) {
            switch decoder {
            case .event: _ = try PXPEventDecoder.decode(body: bytes)
            case .transaction: _ = try PXPTransactionDecoder.decode(bytes)
            }
        }
    }
}

@Suite("PXP array-bodied webhooks")
struct PXPArrayWebhookTests {
    static func event(_ id: String, state: String) -> String {
        #"{"eventCategory":"Transaction","eventData":{"state":"\#(state)","systemTransactionId":"\#(id)","stateData":{"code":"CRD000"}},"eventOwner":{"merchant":"PAYHOOK-1"}}"#
    }

    @Test("a JSON array of events decodes element by element; a single object is one event")
    func arrayAndObject() throws {
        let both = try PXPEventDecoder.decodeAll(body: Array("[\(Self.event("T1", state: "Authorised")),\(Self.event("T2", state: "Captured"))]".utf8))
        #expect(both.map(\.systemTransactionID) == ["T1", "T2"])
        #expect(both.map(\.state) == ["Authorised", "Captured"])
        let single = try PXPEventDecoder.decodeAll(body: Array(Self.event("T3", state: "Refused").utf8))
        #expect(single.map(\.systemTransactionID) == ["T3"])
        #expect(single == [try PXPEventDecoder.decode(body: Array(Self.event("T3", state: "Refused").utf8))])
    }

    @Test("an empty array, an array of non-objects or a bad element is an error naming the element", arguments: [
        ("[]", PayloadError(provider: .pxp, code: .malformedJSON)),
        ("[1]", PayloadError(provider: .pxp, code: .invalidField, field: "[0]")),
        ("[\(event("T1", state: "Captured")),{\"eventData\":{}}]", PayloadError(provider: .pxp, code: .missingField, field: "[1].eventCategory")),
    ])
    func badArrays(body: String, expected: PayloadError) {
        #expect(throws: expected) { try PXPEventDecoder.decodeAll(body: Array(body.utf8)) }
    }
}
