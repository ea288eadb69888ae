import Foundation
import PayhookCrypto

/// Random identifiers in each provider's style.
enum EmulatorIDs {
    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// Crockford base32, upper case, as in Mercado Pago's `ORD01JQ4S4KY8HWQ6NA5PXB65B3D3`.
    static func base32(_ count: Int) -> String {
        String(decoding: SecureRandom.bytes(count).map { alphabet[Int($0 & 31)] }, as: UTF8.self)
    }

    static func uuid() -> String { UUID().uuidString.lowercased() }

    static func timestamp(_ date: Date = Date()) -> String {
        // A format style, not a new ISO8601DateFormatter per call (ICU setup on every charge).
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
