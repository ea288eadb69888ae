import PayhookCore
import Foundation

/// Freshness checks for signed timestamps, shared by the verifiers that have one.
enum TimestampFreshness {
    /// Reads a timestamp header for the freshness check only (the signature always covers
    /// the text as received).
    ///
    /// All digits: Unix time, in milliseconds when 12 or more digits (13 today), else seconds
    /// (10 today): the unit is told apart by length because providers do not document it.
    /// Otherwise, when `allowISO8601`, an ISO 8601 date-time read by ``ProviderTimestamp``, the
    /// decoders' parser, so a header is never refused in a format the provider's own bodies use
    /// (PXP's seven fractional digits, offsets without a colon).
    static func date(from text: String, allowISO8601: Bool) -> Date? {
        let trimmed = text.trimmingASCIIWhitespace()
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            guard trimmed.utf8.count <= 18, let value = Int64(trimmed) else { return nil }
            if trimmed.utf8.count >= 12 {
                return Date(timeIntervalSince1970: Double(value) / 1000)
            }
            return Date(timeIntervalSince1970: Double(value))
        }
        guard allowISO8601 else { return nil }
        return ProviderTimestamp.parse(trimmed)
    }

    /// Applies `policy` to a verified delivery's timestamp.
    ///
    /// Both directions count: a timestamp far in the future is as suspect as an old one.
    /// A timestamp that cannot be read cannot be shown fresh, so it is treated like a stale one
    /// (warning `unparseable_timestamp` under `warn`).
    /// - Returns: the warnings to attach, or `nil` when the delivery must be rejected.
    static func check(
        _ text: String, allowISO8601: Bool, now: Date, tolerance: Duration, policy: StaleTimestampPolicy
    ) -> [String]? {
        guard let date = date(from: text, allowISO8601: allowISO8601) else {
            return policy == .reject ? nil : ["unparseable_timestamp"]
        }
        let (seconds, attoseconds) = tolerance.components
        let window = Double(seconds) + Double(attoseconds) / 1e18
        guard abs(now.timeIntervalSince(date)) > window else { return [] }
        return policy == .reject ? nil : [RejectionReason.staleTimestamp.rawValue]
    }
}
