/// What one provider event does to a payment's stored status.
///
/// Most events report a status that may only move the payment forward (``advance(_:)``).
/// A few provider events legitimately move a payment backwards; each is a named case here so
/// that no ordinary status report can ever do the same by accident. The one rule that applies
/// them is ``PaymentStatus/resolve(current:applying:refundedMinorUnits:amountMinorUnits:)``.
public enum StatusTransition: Sendable, Hashable {
    /// The provider reports this status; it replaces the stored one only if
    /// ``PaymentStatus/shouldReplace(current:with:)`` allows it.
    case advance(PaymentStatus)
    /// A chargeback was reversed in the merchant's favour (Adyen `CHARGEBACK_REVERSED`):
    /// the only way out of `charged_back`.
    case chargebackReversed
    /// The scheme rejected a capture that had been reported as done (Adyen `CAPTURE_FAILED`):
    /// the only way from `captured` back to `failed`.
    case captureFailed
    /// A refund that had been reported as done failed (Adyen `REFUND_FAILED`): the refund
    /// status is recomputed from the refunds that remain.
    case refundFailed
    /// The provider refused a modification request (capture, cancel, refund with
    /// `success=false`): history only, the status does not change.
    case modificationRefused
    /// The provider tells something about the payment that moves no money (Adyen
    /// `NOTIFICATION_OF_CHARGEBACK`, `REQUEST_FOR_INFORMATION`: a dispute was opened or the
    /// issuer asks for documents): history only, the status does not change.
    case notice

    /// The status an ``advance(_:)`` reports; `nil` for the explicit transitions.
    public var reportedStatus: PaymentStatus? {
        if case .advance(let status) = self { return status }
        return nil
    }
}
