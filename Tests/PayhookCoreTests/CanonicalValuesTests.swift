import Foundation
import Testing
@testable import PayhookCore

/// A made-up 16-digit number that passes the Luhn check; it belongs to no card range in use.
let syntheticPAN = "9400000000000007"

@Suite("Canonical values")
struct CanonicalValuesTests {
    @Test("the synthetic test number really is Luhn-valid")
    func syntheticIsLuhnValid() {
        #expect(CardDataFilter.luhnValid(ArraySlice(syntheticPAN.utf8.map { $0 - 0x30 })))
    }

    @Test("text containing a card number is recognised", arguments: [
        syntheticPAN, "card \(syntheticPAN) refused", "9400 0000 0000 0007", "9400-0000-0000-0007",
        "x\(syntheticPAN)y",
    ])
    func detects(_ text: String) {
        #expect(CardDataFilter.containsCardNumber(text))
        #expect(CardDataFilter.scrubbed(text) == nil)
    }

    @Test("ordinary references and reasons pass through", arguments: [
        "Refused", "CVC Declined", "874574:0010:03/2030", "1143-R2", "DQWW2BQ9FX2R7475",
        "cc_rejected_insufficient_amount", "9400000000000005", "123456789012", "0000000000000000", "00\(syntheticPAN)", "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3",
    ])
    func passes(_ text: String) {
        #expect(!CardDataFilter.containsCardNumber(text))
        #expect(CardDataFilter.scrubbed(text) == text)
    }

    @Test("a vault token keeps only four-digit last4 and MM/YYYY expiry")
    func vaultTokenSanitizes() {
        let token = VaultTokenSnapshot(provider: .adyen, token: "T1", shopperReference: syntheticPAN,
                                       brand: "visa", last4: syntheticPAN, expiry: "3/2030", status: .active)
        #expect(token.last4 == nil)
        #expect(token.shopperReference == nil)
        #expect(token.expiry == "03/2030")
        #expect(!String(describing: token).contains(syntheticPAN))
    }

    @Test("expiry normalisation", arguments: [
        ("03/2030", "03/2030"), ("3/2030", "03/2030"), ("12/30", "12/2030"), ("13/2030", nil),
        ("00/2030", nil), ("03-2030", nil), ("03/230", nil), ("ab/2030", nil),
    ] as [(String, String?)])
    func expiry(input: String, expected: String?) {
        #expect(VaultTokenSnapshot.normalizedExpiry(input) == expected)
    }

    @Test("payment snapshots drop card numbers from free text")
    func paymentScrubs() {
        let payment = PaymentSnapshot(provider: .adyen, providerPaymentID: "P1", merchantReference: "order \(syntheticPAN)",
                                      transition: .advance(.declined), statusDetail: "PAN \(syntheticPAN) invalid")
        #expect(payment.merchantReference == nil)
        #expect(payment.statusDetail == nil)
    }

    @Test("event types come from the closed documented set", arguments: [
        (StatusTransition.advance(.pending), "payment.pending"),
        (.advance(.authorized), "payment.authorized"),
        (.advance(.captured), "payment.captured"),
        (.advance(.partiallyRefunded), "payment.refunded"),
        (.advance(.refunded), "payment.refunded"),
        (.advance(.canceled), "payment.canceled"),
        (.advance(.declined), "payment.declined"),
        (.advance(.failed), "payment.failed"),
        (.advance(.expired), "payment.expired"),
        (.advance(.chargedBack), "payment.charged_back"),
        (.chargebackReversed, "payment.chargeback_reversed"),
        (.captureFailed, "payment.capture_failed"),
        (.refundFailed, "payment.refund_failed"),
        (.modificationRefused, "payment.modification_refused"),
    ])
    func paymentTypes(transition: StatusTransition, expected: String) {
        let event = CanonicalEvent.payment(PaymentSnapshot(provider: .pxp, providerPaymentID: "X", transition: transition))
        #expect(event.type == expected)
        #expect(CanonicalEvent.allTypes.contains(event.type))
    }

    @Test("token, order and unknown events have their types")
    func otherTypes() {
        let token = VaultTokenSnapshot(provider: .adyen, token: "T", status: .disabled)
        #expect(CanonicalEvent.vaultToken(token, change: .disabled).type == "token.disabled")
        #expect(CanonicalEvent.vaultToken(token, change: .created).type == "token.created")
        #expect(CanonicalEvent.unknown(provider: .adyen, eventType: "REPORT_AVAILABLE", reference: nil).type == "unknown")
        let order = OrderSnapshot(provider: .mercadopago, providerOrderID: "ORD1", providerStatus: "processed",
                                  status: .captured, payments: [])
        #expect(CanonicalEvent.order(order).type == "order.updated")
        for change in VaultTokenChange.allCases {
            #expect(CanonicalEvent.allTypes.contains("token." + change.rawValue))
        }
    }
}
