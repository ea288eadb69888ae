import Foundation
import PayhookCore

/// The raw bytes of `Fixtures/payloads/<name>.json`: sample provider payloads written for these
/// tests from the providers' public docs (no real card numbers).
func payload(_ name: String) throws -> [UInt8] {
    guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures/payloads") else {
        throw CocoaError(.fileNoSuchFile)
    }
    return Array(try Data(contentsOf: url))
}

/// A made-up 16-digit number that passes the Luhn check and belongs to no issued card range.
let syntheticPAN = "9400000000000007"

/// Whether any rendering of `value` contains the synthetic card number, with or without
/// separators, so a card number can be shown not to survive decoding anywhere in the value.
func mentionsSyntheticPAN(_ value: Any) -> Bool {
    let text = String(reflecting: value)
    return text.contains(syntheticPAN) || text.contains("9400 0000 0000 0007") || text.contains("9400-0000-0000-0007")
}

/// A deliberately small stand-in for the database applier, to show how canonical events
/// combine: status through the precedence rule, refunds by their declared shape.
struct PaymentFold {
    var status: PaymentStatus?
    var amount: Money?
    var increments: [String: Int64] = [:]
    var total: Int64?

    var refunded: Int64 { total ?? increments.values.reduce(0, +) }

    mutating func apply(_ payment: PaymentSnapshot) {
        if let amount = payment.amount { self.amount = amount }
        switch payment.refund {
        case .increment(let reference, let money)?: increments[reference] = money.minorUnits
        case .failed(let reference)?: increments[reference] = nil
        case .total(let money)?: total = money.minorUnits
        case nil: break
        }
        status = PaymentStatus.resolve(current: status, applying: payment.transition,
                                       refundedMinorUnits: refunded, amountMinorUnits: amount?.minorUnits)
        // The sum or the amount may have just become known (a refund can arrive before the
        // authorisation that states the amount), so the refund status is recomputed every time.
        if let refundStatus = PaymentStatus.refundStatus(refundedMinorUnits: refunded, amountMinorUnits: amount?.minorUnits) {
            status = PaymentStatus.resolve(current: status, applying: .advance(refundStatus))
        }
    }
}

extension CanonicalEvent {
    var paymentSnapshot: PaymentSnapshot? {
        if case .payment(let payment) = self { return payment }
        return nil
    }
}
