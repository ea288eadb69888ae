public import Foundation

/// One webhook delivery exactly as it arrived, before anything is trusted.
///
/// Signatures cover raw bytes, so the body and the query string are kept byte for byte;
/// header names are lowercased once here so that lookups are case-insensitive everywhere.
public struct WebhookRequest: Sendable, LowercasedHeaders {
    public let provider: ProviderID
    /// Merchant account from `/webhooks/{provider}/{account}`; `nil` for the default account.
    public let account: String?
    /// The query string as sent, without the leading `?`, still percent-encoded.
    public let rawQuery: String
    /// Header pairs in arrival order, names lowercased.
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]
    public let remoteAddress: String
    public let receivedAt: Date

    public init(
        provider: ProviderID, account: String?, rawQuery: String,
        headers: [(name: String, value: String)], body: [UInt8],
        remoteAddress: String, receivedAt: Date
    ) {
        self.provider = provider
        self.account = account
        self.rawQuery = rawQuery
        // Ingress hands over HTTPRequest's headers, already lowercased: keep that array
        // rather than rebuild it for every delivery.
        let lowercased = !headers.contains { header in header.name.utf8.contains { $0 >= 65 && $0 <= 90 } }
        self.headers = lowercased ? headers : headers.map { (name: $0.name.asciiLowercased(), value: $0.value) }
        self.body = body
        self.remoteAddress = remoteAddress
        self.receivedAt = receivedAt
    }

    /// The first value of a query parameter, percent-decoded (`+` is a space, as in forms).
    public func queryParameter(_ name: String) -> String? {
        if let found = Self.plainQueryParameter(name, in: rawQuery) { return found }
        return Self.decodedQueryParameter(name, in: rawQuery)
    }

    /// The general lookup: every pair's key percent-decoded, then compared as Strings.
    static func decodedQueryParameter(_ name: String, in rawQuery: String) -> String? {
        // Split on UTF-8 bytes (the separators are ASCII); `String.split` walks grapheme
        // clusters, a visible cost on the ingress path.
        for pair in rawQuery.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let key = Self.percentDecode(String(Substring(pair[..<(equals ?? pair.endIndex)])))
            if key == name {
                guard let equals else { return "" }
                return Self.percentDecode(String(Substring(pair[pair.index(after: equals)...])))
            }
        }
        return nil
    }

    /// The usual case of ``queryParameter(_:)`` without building a String per pair: an ASCII
    /// `name` found in a pair whose key has no escapes (`%`, `+`), so bytes compare as the
    /// decoded Strings would. `.some(nil)` says "the name is surely absent"; `nil` says
    /// "undecided, take the general path" (an escaped key or a non-ASCII name).
    static func plainQueryParameter(_ name: String, in rawQuery: String) -> String?? {
        guard name.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "+") }) else { return nil }
        var query = rawQuery
        return query.withUTF8 { bytes -> String?? in
            var name = name
            return name.withUTF8 { wanted -> String?? in
                var undecided = false
                var pairStart = 0
                while pairStart < bytes.count {
                    var pairEnd = pairStart
                    while pairEnd < bytes.count, bytes[pairEnd] != UInt8(ascii: "&") { pairEnd += 1 }
                    defer { pairStart = pairEnd + 1 }
                    guard pairEnd > pairStart else { continue }  // "a=1&&b=2": empty pairs are skipped
                    var keyEnd = pairStart
                    while keyEnd < pairEnd, bytes[keyEnd] != UInt8(ascii: "=") { keyEnd += 1 }
                    let key = UnsafeBufferPointer(rebasing: bytes[pairStart..<keyEnd])
                    if key.contains(where: { $0 >= 0x80 || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) {
                        // Decoding could turn this key into `name`, and a non-ASCII key can equal
                        // an ASCII one as Strings (U+212A KELVIN SIGN is "K"); pairs are matched
                        // in order, so the general path must decide from here.
                        undecided = true
                        break
                    }
                    guard key.elementsEqual(wanted) else { continue }
                    guard keyEnd < pairEnd else { return .some("") }
                    let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[(keyEnd + 1)..<pairEnd]), as: UTF8.self)
                    return .some(percentDecode(value))
                }
                return undecided ? nil : .some(nil)
            }
        }
    }

    static func percentDecode(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) else { return text }
        let spaced = String(decoding: text.utf8.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        return spaced.removingPercentEncoding ?? spaced
    }
}
