/// What to do when a signature verifies but its timestamp is outside the tolerance.
///
/// Mercado Pago may reuse an old `ts` on retries, so there the default is `warn` (a metric and
/// a log line); PXP retries within seconds, so there it is `reject`.
public enum StaleTimestampPolicy: String, Sendable, CaseIterable {
    /// Accept, adding `stale_timestamp` to ``VerifiedDelivery/warnings``.
    case warn
    /// Refuse with ``RejectionReason/staleTimestamp``.
    case reject
}
