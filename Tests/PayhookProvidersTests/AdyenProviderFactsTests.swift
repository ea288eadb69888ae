import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

/// Adyen facts payhook relies on, each against a fixture in Adyen's documented shape. Sources
/// of each fixture are listed in docs/providers.md ("Adyen: sources of the fixtures").
@Suite("Adyen provider facts")
struct AdyenProviderFactsTests {
    static func payments(_ name: String) throws -> [PaymentSnapshot] {
        try AdyenEventDecoder.decode(body: payload(name)).map { event in try #require(event.paymentSnapshot) }
    }

    // MARK: Captures

    @Test("a CAPTURE's amount is the captured amount, carried as a capture of its own pspReference")
    func partialCapture() throws {
        let captures = try Self.payments("adyen-capture-partial")
        #expect(captures.map(\.providerPaymentID) == ["PAY0000000000001", "PAY0000000000001"])
        #expect(captures.map(\.capture) == [
            .increment(reference: "CAP1000000000001", amount: try Money(minorUnits: 4000, currency: "EUR")),
            .increment(reference: "CAP1000000000002", amount: try Money(minorUnits: 3500, currency: "EUR")),
        ])
        #expect(captures.allSatisfy { $0.amount == nil && $0.status == .captured })
    }

    @Test("CAPTURE_FAILED names the capture that failed")
    func captureFailed() throws {
        let failed = try #require(try Self.payments("adyen-capture-failed").first)
        #expect(failed.capture == .failed(reference: "CAP1000000000002"))
        #expect(failed.transition == .captureFailed)
    }

    // MARK: Identity

    @Test("an item's identity is its eight signed fields: another eventDate or additionalData is the same event")
    func identityFromSignedFields() throws {
        let body = try String(decoding: payload("adyen-dispute-stages"), as: UTF8.self)
        let replayed = body.replacingOccurrences(of: "2025-06-10T10:00:00+02:00", with: "2025-06-11T09:00:00+02:00")
            .replacingOccurrences(of: "\"chargebackReasonCode\":\"10.4\"", with: "\"chargebackReasonCode\":\"13.1\"")
        let original = try AdyenEventDecoder.decode(body: Array(body.utf8)).compactMap(\.paymentSnapshot)
        let again = try AdyenEventDecoder.decode(body: Array(replayed.utf8)).compactMap(\.paymentSnapshot)
        #expect(original[2].providerStatus == "CHARGEBACK")
        #expect(original[2].occurredAt != again[2].occurredAt)
        #expect(original.map(\.eventReference) == again.map(\.eventReference))
        // Each dispute stage shares the dispute's pspReference but is its own event.
        #expect(Set(original.map(\.eventReference)).count == original.count)
    }

    // MARK: Dispute codes

    @Test("dispute stages: pspReference is the dispute's, originalReference the payment's; each code its own meaning")
    func disputeStages() throws {
        let stages = try Self.payments("adyen-dispute-stages")
        #expect(stages.allSatisfy { $0.providerPaymentID == "PAY0000000000002" })
        #expect(stages.map(\.providerStatus) == ["NOTIFICATION_OF_CHARGEBACK", "REQUEST_FOR_INFORMATION", "CHARGEBACK",
                                                "CHARGEBACK_REVERSED", "SECOND_CHARGEBACK", "PREARBITRATION_WON",
                                                "PREARBITRATION_LOST"])
        #expect(stages.map(\.transition) == [.notice, .notice, .advance(.chargedBack), .chargebackReversed,
                                             .advance(.chargedBack), .chargebackReversed, .advance(.chargedBack)])
        #expect(CanonicalEvent.payment(stages[0]).type == "payment.notice")
        #expect(stages.allSatisfy { $0.modificationAmount == (try? Money(minorUnits: 10000, currency: "EUR")) })
    }

    // MARK: Other codes

    @Test("REFUNDED_REVERSED takes the refund it names out of the refunded sum")
    func refundedReversed() throws {
        let reversed = try #require(try Self.payments("adyen-refunded-reversed").first)
        #expect(reversed.providerPaymentID == "PAY0000000000003")
        #expect(reversed.refund == .failed(reference: "RFR0000000000001"))
        #expect(reversed.transition == .refundFailed)
    }

    @Test("OFFER_CLOSED ends an open payment as expired")
    func offerClosed() throws {
        let closed = try #require(try Self.payments("adyen-offer-closed").first)
        #expect(closed.providerPaymentID == "PAY0000000000004")
        #expect(closed.transition == .advance(.expired))
    }

    @Test("AUTHORISATION_ADJUSTMENT states the new authorised amount and replaces the stored one")
    func authorisationAdjustment() throws {
        let adjusted = try #require(try Self.payments("adyen-authorisation-adjustment").first)
        #expect(adjusted.providerPaymentID == "PAY0000000000005")
        #expect(adjusted.amount == (try Money(minorUnits: 12500, currency: "EUR")))
        #expect(adjusted.replacesAmount)
        #expect(adjusted.transition == .modificationRefused)
    }

    // MARK: Currency exponents

    @Test("webhook amounts in Adyen's minor units become ISO minor units")
    func exponentCurrencies() throws {
        let authorisations = try Self.payments("adyen-exponent-currencies")
        #expect(authorisations.compactMap(\.amount) == [
            try Money(minorUnits: 12345, currency: "CLP"),   // Adyen 1234500 = CLP 12,345.00; ISO has no decimals
            try Money(minorUnits: 1200, currency: "CVE"),    // Adyen 12 = CVE 12; ISO counts centavos
            try Money(minorUnits: 1000000, currency: "IDR"), // Adyen 10000 = IDR 10,000; ISO counts sen
            try Money(minorUnits: 2790, currency: "ISK"),    // Adyen 279000 = ISK 2,790.00; ISO has no decimals
            try Money(minorUnits: 12345, currency: "KWD"),   // three decimals on both sides
            try Money(minorUnits: 1000, currency: "JPY"),    // none on both sides
        ])
    }

    @Test("every currency whose exponents differ converts both ways", arguments: [
        // (currency, Adyen amount.value, ISO minor units)
        ("CLP", Int64(1_234_500), Int64(12_345)),
        ("CVE", 12, 1_200),
        ("IDR", 10_000, 1_000_000),
        ("ISK", 279_000, 2_790),
        ("MRO", 125, 1_250),
    ])
    func bothDirections(currency: String, adyen: Int64, iso: Int64) throws {
        #expect(try AdyenCurrency.isoMoney(adyenValue: adyen, currency: currency) == Money(minorUnits: iso, currency: currency))
        #expect(try AdyenCurrency.adyenValue(of: Money(minorUnits: iso, currency: currency)) == adyen)
    }

    @Test("currencies with the same exponent on both sides pass through unchanged", arguments: [
        ("EUR", Int64(10_010)), ("JPY", 1_000), ("KRW", 55_000), ("BHD", 12_345), ("KWD", 1), ("TND", 999), ("XOF", 5_000),
    ])
    func sameExponent(currency: String, value: Int64) throws {
        #expect(try AdyenCurrency.isoMoney(adyenValue: value, currency: currency).minorUnits == value)
        #expect(try AdyenCurrency.adyenValue(of: Money(minorUnits: value, currency: currency)) == value)
    }

    @Test("an amount one side cannot hold exactly is refused, never rounded", arguments: [
        ("CLP", Int64(1_234_550)), ("ISK", 279_001), ("IDR", 10_001), ("CVE", 1),
    ])
    func notRepresentable(currency: String, value: Int64) throws {
        // From Adyen: CLP 12,345.50 has centavos ISO cannot store.
        if ["CLP", "ISK"].contains(currency) {
            #expect(throws: AdyenAmountError.notRepresentable(currency: currency)) {
                try AdyenCurrency.isoMoney(adyenValue: value, currency: currency)
            }
        } else {
            // To Adyen: IDR 100.01 or CVE 0.01 has a fraction Adyen does not count.
            #expect(throws: AdyenAmountError.notRepresentable(currency: currency)) {
                try AdyenCurrency.adyenValue(of: Money(minorUnits: value, currency: currency))
            }
        }
    }

    @Test("a CLP webhook amount with centavos ISO cannot hold is an invalid field, not a rounded amount")
    func webhookNotRepresentable() throws {
        let body = try String(decoding: payload("adyen-exponent-currencies"), as: UTF8.self)
            .replacingOccurrences(of: "\"value\":1234500", with: "\"value\":1234550")
        #expect(throws: PayloadError(provider: .adyen, code: .invalidField,
                                     field: "notificationItems[0].NotificationRequestItem.amount.value")) {
            try AdyenEventDecoder.decode(body: Array(body.utf8))
        }
    }

    @Test("ISO currencies no Adyen source lists are refused both ways", arguments: ["BIF", "CLF", "UYI", "UYW"])
    func unlisted(currency: String) throws {
        #expect(throws: AdyenAmountError.unsupportedCurrency(currency)) {
            try AdyenCurrency.isoMoney(adyenValue: 100, currency: currency)
        }
        #expect(throws: AdyenAmountError.unsupportedCurrency(currency)) {
            try AdyenCurrency.adyenValue(of: Money(minorUnits: 100, currency: currency))
        }
    }

    @Test("a subscription amount is sent as Adyen's amount.value", arguments: [
        ("CLP", Int64(1_000), "100000"), ("CVE", 1_200, "12"), ("IDR", 1_500_000, "15000"), ("ISK", 2_790, "279000"),
        ("JPY", 1_000, "1000"), ("KWD", 12_345, "12345"), ("EUR", 1_010, "1010"),
    ])
    func chargeAmount(currency: String, iso: Int64, expected: String) throws {
        let body = try AdyenAPIClient.chargeBody(
            token: "M5N7TQ4TG5PFWR50", shopperReference: "shopper-9", amount: Money(minorUnits: iso, currency: currency),
            reference: "sub-9-cycle-2", merchantAccount: "PayhookECOM")
        #expect(body.rendered.hasPrefix("{\"amount\":{\"currency\":\"\(currency)\",\"value\":\(expected)},"))
    }

    @Test("a subscription amount Adyen cannot express is refused before sending")
    func chargeNotRepresentable() throws {
        #expect(throws: ProviderAPIError.self) {
            try AdyenAPIClient.chargeBody(
                token: "M5N7TQ4TG5PFWR50", shopperReference: "shopper-9", amount: Money(minorUnits: 1_250, currency: "CVE"),
                reference: "sub-9-cycle-2", merchantAccount: "PayhookECOM")
        }
    }
}
