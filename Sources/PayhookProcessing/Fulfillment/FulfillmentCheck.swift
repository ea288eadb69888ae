/// Decides whether an order may be fulfilled, from the registered expectation and the
/// payments as normalization left them. Pure, so every rule is unit-tested without a database.
///
/// Providers promise no order, so a check can run before every fact it needs has arrived (a
/// `CAPTURE` before its `AUTHORISATION` carries no amount yet). A fact that is missing makes
/// the check wait and run again (``Verdict/wait(_:)``); only a fact that contradicts the order
/// is a mismatch for a person to review, never a guess in the merchant's disfavour or ours:
/// - the order was registered with an amount and currency;
/// - the provider's own order status, when it reported one, is paid (still pending: wait); of
///   several provider orders linked by reference, one paid is enough;
/// - the paid payments (captured; authorized too when configured) are all in the expected
///   currency and add up to exactly the expected minor units: more is overpaid (a mismatch),
///   less may be a capture still to come (wait). A captured payment adds what its captures took
///   (``countedMinor(_:amountMinor:)``), so a partial capture leaves the order underpaid;
/// - every paid payment was delivered for the order's account (per-account routes), and every
///   one that carries a merchant reference carries the registered one;
/// - when funding types are restricted, every paid payment reports an allowed one (an
///   unreported one: wait).
package enum FulfillmentCheck {
    package enum Verdict: Equatable {
        case fulfill
        /// A fact is missing; check again later, and send the order to review only if it never comes.
        case wait(String)
        case mismatch(String)
    }

    /// Statuses that may still become paid: a check seeing only these waits.
    static let notYetPaid: Set<String> = ["pending", "authorized"]

    static func evaluate(_ order: OrderRecord, settings: FulfillmentSettings) -> Verdict {
        guard let expectedMinor = order.expectedAmountMinor, let expectedCurrency = order.expectedCurrency else {
            return .mismatch("order was never registered with an amount")
        }
        let paidStatuses = Set(settings.paidStatuses)
        let canonicalStatuses: Set<String> = ["pending", "authorized", "captured", "partially_refunded", "refunded",
                                              "canceled", "declined", "failed", "expired", "charged_back"]
        // The order's own provider status and those of the provider orders linked to it by
        // reference (other checkout attempts): one paid attempt is enough, failed ones stay history.
        let reported = ([order.status] + order.providerOrders.map(\.status)).filter(canonicalStatuses.contains)
        if !reported.isEmpty, !reported.contains(where: paidStatuses.contains) {
            if let pending = reported.first(where: notYetPaid.contains) {
                return .wait("provider order status is \(pending), not paid yet")
            }
            return .mismatch("provider order status is \(reported.joined(separator: ", ")), not paid")
        }
        let paid = order.payments.filter { paidStatuses.contains($0.status) }
        guard !paid.isEmpty else {
            let statuses = order.payments.map(\.status)
            let description = "no paid payment (payment statuses: \(statuses.isEmpty ? "none" : statuses.joined(separator: ", ")))"
            return statuses.contains(where: notYetPaid.contains) ? .wait(description) : .mismatch(description)
        }
        var total: Int64 = 0
        var missing: String?
        for payment in paid {
            guard payment.account == order.account else {
                return .mismatch("account mismatch: payment \(payment.providerPaymentID) was delivered for account \(Self.name(payment.account)), the order belongs to \(Self.name(order.account))")
            }
            if let reference = payment.merchantReference, let expected = order.merchantReference, reference != expected {
                return .mismatch("merchant reference mismatch: payment \(payment.providerPaymentID) names \(reference), order is \(expected)")
            }
            guard let minor = payment.amountMinor, let currency = payment.currency else {
                missing = missing ?? "payment \(payment.providerPaymentID) has no reported amount yet"
                continue
            }
            guard currency == expectedCurrency else {
                return .mismatch("currency mismatch: payment \(payment.providerPaymentID) is in \(currency), order expects \(expectedCurrency)")
            }
            let (sum, overflow) = total.addingReportingOverflow(Self.countedMinor(payment, amountMinor: minor))
            guard !overflow else { return .mismatch("payment amounts overflow") }
            total = sum
            if let allowed = settings.allowedFunding {
                guard let funding = payment.funding else {
                    missing = missing ?? "funding of payment \(payment.providerPaymentID) is not reported yet"
                    continue
                }
                guard allowed.contains(funding) else {
                    return .mismatch("funding \(funding) of payment \(payment.providerPaymentID) is not allowed")
                }
            }
        }
        if total > expectedMinor {
            return .mismatch("amount mismatch (overpaid): paid \(total) \(expectedCurrency) minor units, order expects \(expectedMinor)")
        }
        if let missing { return .wait(missing) }
        if total < expectedMinor {
            return .wait("amount mismatch (underpaid so far): paid \(total) \(expectedCurrency) minor units, order expects \(expectedMinor)")
        }
        return .fulfill
    }

    /// What a paid payment contributes: a captured payment whose captures were reported one by
    /// one (Adyen) counts what those captures took, so 4,000 captured of a 10,000 authorisation
    /// is 4,000; any other paid payment (Mercado Pago and PXP report fetched state, and an
    /// authorisation counted as paid has nothing captured yet) counts its amount in full.
    static func countedMinor(_ payment: OrderRecord.Payment, amountMinor: Int64) -> Int64 {
        guard payment.status == "captured", let captured = payment.capturedMinor else { return amountMinor }
        return captured
    }

    private static func name(_ account: String) -> String { account.isEmpty ? "(default route)" : account }
}
