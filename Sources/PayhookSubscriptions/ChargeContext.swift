import Foundation
import PayhookCore
import PayhookProviders

/// What a charge request tells the provider beyond the token and the amount: the place in
/// the series, the earlier transaction, and the cycle's billing data.
///
/// A function of the charge row, its subscription and its token only, so a retry of an
/// idempotency key sends the same request. Two inputs can still change between retries: the
/// token's first payment, when the processor first sees it meanwhile, and `max_cycles`, when an
/// operator edits it. Mercado Pago would then refuse the retry as a different request under the
/// same key; the charge stays unknown and ends in a dead letter, never in a second charge.
package enum ChargeContext {
    static func credential(_ loaded: ChargeRecurringHandler.Loaded, previous: String?) -> StoredCredential {
        let charge = loaded.charge
        let isMercadoPago = loaded.provider == ProviderID.mercadopago.rawValue
        return StoredCredential(
            // A Mercado Pago card id is charged through its payment profile (`hold` skips one
            // that has none before this is reached).
            token: loaded.token.chargeable ?? loaded.token.value, shopperReference: loaded.token.shopperReference,
            customerID: loaded.token.customerID,
            // Mercado Pago wants the first payment (the customer-present one that registered the
            // card), never an earlier order: payhook's charges are orders, their ids are no
            // payment ids. The others take the last successful charge of the subscription.
            previousTransactionReference: isMercadoPago ? loaded.token.firstPaymentReference : previous,
            reason: charge.reason == "resubmission" ? .resubmission : .recurring,
            // The first merchant-initiated charge of payhook's series on this subscription: no
            // earlier cycle succeeded (`previous` is frozen on the row at the first call).
            sequence: previous == nil ? .initial : .subsequent,
            billing: billing(loaded))
    }

    /// The cycle's billing data; nil when the interval does not parse (a row written by hand).
    static func billing(_ loaded: ChargeRecurringHandler.Loaded) -> RecurringBilling? {
        guard let interval = loaded.schedule.interval else { return nil }
        let charge = loaded.charge
        let unit: RecurringBilling.PeriodUnit = switch interval.unit {
        case .day: .day
        case .week: .week
        case .month: .month
        }
        return RecurringBilling(
            invoiceID: ChargeRecurringHandler.reference(loaded),
            billingDate: day(interval.dueDate(cycle: charge.cycle, start: loaded.schedule.startAt)),
            sequenceNumber: charge.cycle, sequenceTotal: loaded.schedule.maxCycles, unit: unit, period: interval.every)
    }

    /// `YYYY-MM-DD` in UTC.
    static func day(_ date: Date) -> String {
        let parts = SubscriptionInterval.utc.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
