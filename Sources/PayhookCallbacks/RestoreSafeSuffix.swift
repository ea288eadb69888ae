import PayhookCrypto

/// The random part of every identifier payhook sends out and a receiver may remember:
/// provider idempotency keys and merchant callback `webhook-id`s.
///
/// Why: the rest of such an identifier comes from database rows and id sequences, and a
/// restored backup or a staging clone rolls those back while the provider and the merchant keep
/// what they saw. Adyen answers a repeated idempotency key with the earlier customer's cached
/// result, and a merchant that deduplicates callbacks by id drops a new order's `order.paid`.
/// The suffix is generated once, stored with the row before anything is sent, and read back for
/// every retry and replay, so retries still send the same identifier.
package enum RestoreSafeSuffix {
    /// `byteCount` random bytes as lowercase hex (twice as many characters).
    package static func make(byteCount: Int) -> String {
        Hex.encode(SecureRandom.bytes(byteCount))
    }
}
