/// The kinds of job payhook runs: the closed set its handlers are registered under and its
/// features enqueue, spelled once.
///
/// The queue itself stores any text as `jobs.kind` (`JobRequest.kind`, `JobHandler.kind`), so its
/// own tests and the benchmarks need no entry here; SQL that names a kind keeps the literal.
package enum JobKind: String, Sendable, CaseIterable {
    /// Verify a paid order against its registration, then queue `order.paid` (`FulfillOrderHandler`).
    case fulfillOrder = "fulfill_order"
    /// Deliver one merchant callback (`MerchantCallbackDelivery`).
    case merchantCallback = "merchant_callback"
    /// Charge one cycle of a subscription (`ChargeRecurringHandler`).
    case chargeRecurring = "charge_recurring"

    /// The `unique_key` of this kind's one job for `subject` (an order id, a webhook id).
    package func uniqueKey(_ subject: String) -> String { "\(rawValue):\(subject)" }
}
