/// What a provider event says about captured money, for providers that report each capture
/// as its own notification (Adyen `CAPTURE`, whose `amount.value` is the amount captured by
/// that one modification, not the payment's amount).
///
/// The applier keeps one row per capture, keyed by the capture's own provider reference, and
/// stores their sum on the payment as `captured_minor`: several partial captures add up in
/// any order, and the same capture delivered twice counts once. Fetched-state providers
/// (Mercado Pago, PXP) report no captures this way; their `captured_minor` stays empty.
public enum CaptureChange: Sendable, Hashable {
    /// One capture identified by its own provider reference (Adyen: the CAPTURE item's
    /// pspReference) and the amount it captured.
    case increment(reference: String, amount: Money)
    /// The capture reported under `reference` failed (Adyen `CAPTURE_FAILED`, which carries
    /// the capture's pspReference): it no longer counts. A tombstone when it arrives first.
    case failed(reference: String)
}
