import Foundation

/// Idempotency keys and callback webhook-ids end in a random suffix made when their row is
/// written (`RestoreSafeSuffix`). Tests that name an attempt or a fact compare without it.
package enum RestoreSafeIDs {
    /// `<namespace>-sub-<id>-c<cycle>-a<attempt>` of a key `…-a<attempt>-<8 hex>`; a key
    /// without the suffix is returned unchanged, so a comparison with it fails.
    package static func keyStem(_ key: String) -> String {
        guard let range = key.range(of: "-[0-9a-f]{8}$", options: .regularExpression) else { return key }
        return String(key[..<range.lowerBound])
    }

    /// The fact key of a webhook-id `<fact key>.<16 hex>`; an id without the suffix is returned
    /// unchanged, so a comparison with it fails.
    package static func factKey(_ webhookID: String) -> String {
        guard let range = webhookID.range(of: "\\.[0-9a-f]{16}$", options: .regularExpression) else { return webhookID }
        return String(webhookID[..<range.lowerBound])
    }
}
