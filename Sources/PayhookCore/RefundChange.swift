/// What a provider event says about refunds, in one of two incompatible shapes.
///
/// Adyen reports each refund as its own notification (an increment with its own
/// pspReference); Mercado Pago and PXP are read as fetched state (the total refunded so far).
/// Adding a total, or replacing with an increment, would double-count or lose refunds, so the
/// shape is explicit.
///
/// The applier keeps the refunded sum per payment and, whenever the sum or the payment's
/// amount changes (a refund may arrive before the authorisation that states the amount),
/// decides the refund status by comparing the two, through
/// ``PaymentStatus/refundStatus(refundedMinorUnits:amountMinorUnits:)``: below the amount is
/// `partially_refunded`, at or above it `refunded`. A decoder never guesses this itself,
/// because an increment does not say how much was refunded before it.
public enum RefundChange: Sendable, Hashable {
    /// One refund identified by its own provider reference (Adyen REFUND: the refund's
    /// pspReference). Idempotent by `reference`: store refunds keyed by (provider, reference)
    /// and sum them; a duplicate delivery changes nothing.
    case increment(reference: String, amount: Money)
    /// The refund previously reported under `reference` failed (Adyen REFUND_FAILED): remove
    /// it from the sum. Idempotent: removing an absent refund changes nothing.
    case failed(reference: String)
    /// The total refunded so far according to the provider's own state (Mercado Pago
    /// `refunded_amount` / `transaction_amount_refunded`, PXP fetched state). Replaces the
    /// stored total; never added to it. Older snapshots are refused by their timestamp.
    case total(Money)
}
