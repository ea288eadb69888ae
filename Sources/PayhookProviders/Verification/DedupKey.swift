import PayhookCrypto

/// Dedup keys that do not come from event fields.
enum DedupKey {
    /// `sha256:` + lowercase hex of SHA-256 over `bytes`; used for bodies without usable ids
    /// (a provider's retry resends the same bytes) and for shortening long keys.
    static func sha256(_ bytes: [UInt8]) -> String {
        "sha256:" + Hex.encode(Digest.hash(.sha256, bytes))
    }
}
