/// One provider event in payhook's own words: what processors hand to the applier.
///
/// Decoders produce these from provider payloads without I/O. Unknown provider events are a
/// case, not an error: they are stored (``unknown(provider:eventType:reference:)``) so that
/// nothing a provider sends is silently dropped, and nothing new from a provider blocks the
/// queue.
public enum CanonicalEvent: Sendable, Hashable {
    case payment(PaymentSnapshot)
    case order(OrderSnapshot)
    case vaultToken(VaultTokenSnapshot, change: VaultTokenChange)
    /// An event payhook does not interpret: the provider's type (Adyen eventCode, webhook
    /// `type`, PXP category) and its reference when it has one.
    case unknown(provider: ProviderID, eventType: String, reference: String?)

    /// The value stored in `payment_events.type`, from a closed set:
    ///
    /// `payment.pending` `payment.authorized` `payment.captured` `payment.refunded` (partial or
    /// full: the status says which) `payment.canceled` `payment.declined` `payment.failed`
    /// `payment.expired` `payment.charged_back` `payment.chargeback_reversed`
    /// `payment.capture_failed` `payment.refund_failed` `payment.modification_refused` `payment.notice`
    /// `order.updated` `token.created` `token.updated` `token.disabled` `token.expired` `unknown`.
    public var type: String {
        switch self {
        case .payment(let payment):
            switch payment.transition {
            case .advance(.partiallyRefunded), .advance(.refunded): "payment.refunded"
            case .advance(.chargedBack): "payment.charged_back"
            case .advance(let status): "payment." + status.rawValue
            case .chargebackReversed: "payment.chargeback_reversed"
            case .captureFailed: "payment.capture_failed"
            case .refundFailed: "payment.refund_failed"
            case .modificationRefused: "payment.modification_refused"
            case .notice: "payment.notice"
            }
        case .order: "order.updated"
        case .vaultToken(_, let change): "token." + change.rawValue
        case .unknown: "unknown"
        }
    }

    /// Every value ``type`` can take, for a database CHECK constraint or a dashboard.
    public static let allTypes: [String] = [
        "payment.pending", "payment.authorized", "payment.captured", "payment.refunded", "payment.canceled",
        "payment.declined", "payment.failed", "payment.expired", "payment.charged_back",
        "payment.chargeback_reversed", "payment.capture_failed", "payment.refund_failed",
        "payment.modification_refused", "payment.notice", "order.updated", "token.created", "token.updated", "token.disabled",
        "token.expired", "unknown",
    ]
}
