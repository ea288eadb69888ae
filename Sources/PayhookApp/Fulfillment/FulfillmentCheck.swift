/// Decides whether an order may be fulfilled, from the registered expectation and the
/// payments as normalization left them. Pure, so every rule is unit-tested without a database.
///
/// Every rule must hold, and anything unexpected is a mismatch for a person to review, never a
/// guess in the merchant's disfavour or ours:
/// - the order was registered with an amount and currency;
/// - the provider's own order status, when it reported one, is paid;
/// - the paid payments (captured; authorized too when configured) are all in the expected
///   currency and add up to exactly the expected minor units: less is underpaid, more is
///   overpaid, and both are mismatches;
/// - every paid payment that carries a merchant reference carries the registered one;
/// - when funding types are restricted, every paid payment reports an allowed one.
enum FulfillmentCheck {
    enum Verdict: Equatable {
        case fulfill
        case mismatch(String)
    }

    static func evaluate(_ order: OrderRecord, settings: FulfillmentSettings) -> Verdict {
        guard let expectedMinor = order.expectedAmountMinor, let expectedCurrency = order.expectedCurrency else {
            return .mismatch("order was never registered with an amount")
        }
        let paidStatuses = Set(settings.paidStatuses)
        let canonicalStatuses: Set<String> = ["pending", "authorized", "captured", "partially_refunded", "refunded",
                                              "canceled", "declined", "failed", "expired", "charged_back"]
        if canonicalStatuses.contains(order.status), !paidStatuses.contains(order.status) {
            return .mismatch("provider order status is \(order.status), not paid")
        }
        let paid = order.payments.filter { paidStatuses.contains($0.status) }
        guard !paid.isEmpty else {
            let statuses = order.payments.map(\.status)
            return .mismatch("no paid payment (payment statuses: \(statuses.isEmpty ? "none" : statuses.joined(separator: ", ")))")
        }
        var total: Int64 = 0
        for payment in paid {
            guard let minor = payment.amountMinor, let currency = payment.currency else {
                return .mismatch("payment \(payment.providerPaymentID) has no reported amount")
            }
            guard currency == expectedCurrency else {
                return .mismatch("currency mismatch: payment \(payment.providerPaymentID) is in \(currency), order expects \(expectedCurrency)")
            }
            let (sum, overflow) = total.addingReportingOverflow(minor)
            guard !overflow else { return .mismatch("payment amounts overflow") }
            total = sum
            if let reference = payment.merchantReference, let expected = order.merchantReference, reference != expected {
                return .mismatch("merchant reference mismatch: payment \(payment.providerPaymentID) names \(reference), order is \(expected)")
            }
            if let allowed = settings.allowedFunding {
                guard let funding = payment.funding, allowed.contains(funding) else {
                    return .mismatch("funding \(payment.funding ?? "unreported") of payment \(payment.providerPaymentID) is not allowed")
                }
            }
        }
        if total != expectedMinor {
            let kind = total < expectedMinor ? "underpaid" : "overpaid"
            return .mismatch("amount mismatch (\(kind)): paid \(total) \(expectedCurrency) minor units, order expects \(expectedMinor)")
        }
        return .fulfill
    }
}
