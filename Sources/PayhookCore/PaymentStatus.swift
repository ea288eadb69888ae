/// The canonical status of a payment: the closed set stored in `payments.status`.
///
/// Every provider vocabulary maps onto these ten values in one table per provider
/// (`PayhookProviders/<Provider>/…StatusMapping`). Raw values are the snake_case text the
/// database stores. Which status may replace which is decided in one place:
/// ``PaymentStatus/shouldReplace(current:with:)``.
public enum PaymentStatus: String, Sendable, CaseIterable, Codable {
    /// Created or in progress; no outcome yet (Adyen `PENDING`, MP `in_process`, `action_required`).
    case pending
    /// Funds reserved, not yet captured.
    case authorized
    /// Funds captured (or approved in a one-step flow).
    case captured
    /// Captured, and part of the amount was refunded.
    case partiallyRefunded = "partially_refunded"
    /// Captured, and the whole amount was refunded.
    case refunded
    /// Cancelled before capture (by merchant, shopper or provider).
    case canceled
    /// Refused by the issuer, the scheme or risk checks.
    case declined
    /// Failed for a technical reason, or a capture that the scheme rejected.
    case failed
    /// The authorisation or the payment window ran out.
    case expired
    /// The shopper disputed the payment and the funds were taken back.
    case chargedBack = "charged_back"
}
