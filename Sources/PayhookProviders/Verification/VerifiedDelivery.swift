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
    public let keptHeaders: KeptHeaders
    /// Things that did not block acceptance but should be logged and counted,
    /// e.g. `stale_timestamp` under ``StaleTimestampPolicy/warn``.
    public let warnings: [String]
    /// Which key of the ring verified: 0 is the current key; higher means a rotated key is
    /// still in use by the provider.
    public let keyIndex: Int

    /// Longest event type stored; longer or control-character-bearing ones are dropped.
    public static let maximumEventTypeLength = 100

    /// Creates a delivery record; `dedupKey` and `eventType` are made storable here.
    ///
    /// Both can come from body fields that no signature covers (Mercado Pago signs only the
    /// query id, request id and timestamp), so they may hold anything JSON can escape,
    /// including U+0000, which PostgreSQL text refuses. A key with control characters is
    /// replaced by its digest (still stable across duplicates); such an event type is dropped.
    public init(dedupKey: String, eventType: String?, keptHeaders: KeptHeaders, warnings: [String], keyIndex: Int) {
        self.dedupKey = Self.bounded(dedupKey)
        self.eventType = eventType.flatMap {
            $0.utf8.count <= Self.maximumEventTypeLength && !Self.hasControlCharacters($0) ? $0 : nil
        }
        self.keptHeaders = keptHeaders
        self.warnings = warnings
        self.keyIndex = keyIndex
    }

    /// `key` itself when short enough, else `sha256:` + the hex digest of its UTF-8 bytes
    /// (71 bytes), which is stable across duplicates just like the key it replaces.
    static func bounded(_ key: String) -> String {
        guard key.utf8.count > maximumDedupKeyLength || hasControlCharacters(key) else { return key }
        return DedupKey.sha256(Array(key.utf8))
    }

    static func hasControlCharacters(_ text: String) -> Bool {
        // Over the contiguous bytes: the generic UTF8View walk showed in the ingest profile.
        var text = text
        return text.withUTF8 { bytes in bytes.contains { $0 < 0x20 || $0 == 0x7F } }
    }
}
