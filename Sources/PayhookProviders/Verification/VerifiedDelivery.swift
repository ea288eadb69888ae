/// What a verifier learned about a delivery it accepted; enough to store it and deduplicate.
///
/// Verification does not normalize the payload: the raw body stays the source of truth and
/// the decoders run later, in the processors.
public struct VerifiedDelivery: Sendable, Equatable {
    /// Longest dedup key stored as is; longer keys are replaced by their digest so the
    /// `inbound_events.dedup_key` column stays bounded.
    public static let maximumDedupKeyLength = 200

    /// Identity of the event for `UNIQUE (provider, dedup_key)`; identical for a duplicate
    /// delivery. At most ``maximumDedupKeyLength`` UTF-8 bytes.
    public let dedupKey: String
    /// The provider's event name when the body says it (Mercado Pago `action` or `type`,
    /// Adyen event codes or tokenization `type`, PXP `eventCategory`).
    public let eventType: String?
    /// Signature-related, non-secret headers worth storing with the delivery; names lowercased.
    public let keptHeaders: [String: String]
    /// Things that did not block acceptance but should be logged and counted,
    /// e.g. `stale_timestamp` under ``StaleTimestampPolicy/warn``.
    public let warnings: [String]
    /// Which key of the ring verified: 0 is the current key; higher means a rotated key is
    /// still in use by the provider.
    public let keyIndex: Int

    /// Creates a delivery record; `dedupKey` is bounded here (see ``maximumDedupKeyLength``).
    public init(dedupKey: String, eventType: String?, keptHeaders: [String: String], warnings: [String], keyIndex: Int) {
        self.dedupKey = Self.bounded(dedupKey)
        self.eventType = eventType
        self.keptHeaders = keptHeaders
        self.warnings = warnings
        self.keyIndex = keyIndex
    }

    /// `key` itself when short enough, else `sha256:` + the hex digest of its UTF-8 bytes
    /// (71 bytes), which is stable across duplicates just like the key it replaces.
    static func bounded(_ key: String) -> String {
        guard key.utf8.count > maximumDedupKeyLength else { return key }
        return DedupKey.sha256(Array(key.utf8))
    }
}
