/// ASCII-only string helpers for protocol text (headers, signature fields, JSON keys).
///
/// Foundation's `trimmingCharacters(in:)` and `lowercased()` go through Unicode tables (and on
/// Linux through NSString bridging); profiling the ingress path showed them as its largest cost.
/// Protocol text is ASCII by definition, so these work on UTF-8 bytes. They are written for the
/// concrete `String` and `Substring` (not generically) so that callers in other modules get
/// specialized code.
extension UInt8 {
    /// Space, tab, carriage return or line feed: the whitespace these helpers trim.
    @inlinable public var isASCIIWhitespace: Bool { self == 32 || self == 9 || self == 13 || self == 10 }
}

extension UnsafeBufferPointer where Element == UInt8 {
    /// `range` (positions in this buffer) without its leading and trailing ASCII whitespace:
    /// the byte-level `trimmingASCIIWhitespace()`, for parsers that work on a header's bytes
    /// and only make a String of what they keep.
    @inlinable public func trimmingASCIIWhitespace(_ range: Range<Int>) -> Range<Int> {
        var start = range.lowerBound
        var end = range.upperBound
        while start < end, self[start].isASCIIWhitespace { start += 1 }
        while end > start, self[end - 1].isASCIIWhitespace { end -= 1 }
        return start..<end
    }
}

extension String {
    /// The text without leading and trailing spaces, tabs, carriage returns and line feeds.
    public func trimmingASCIIWhitespace() -> String { Substring(self).trimmingASCIIWhitespace() }

    /// Whether the text is empty or only ASCII whitespace: what `trimmingASCIIWhitespace()`
    /// would leave empty, decided without building the trimmed text.
    public var isASCIIBlank: Bool { utf8.allSatisfy { $0.isASCIIWhitespace } }

    /// The text with ASCII `A`–`Z` lowercased and everything else unchanged; returns the text
    /// itself without copying when it has no upper-case ASCII letters.
    public func asciiLowercased() -> String {
        var hasUpper = false
        for byte in utf8 where byte >= 65 && byte <= 90 {
            hasUpper = true
            break
        }
        guard hasUpper else { return self }
        return String(decoding: utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

extension Substring {
    /// The text without leading and trailing spaces, tabs, carriage returns and line feeds.
    public func trimmingASCIIWhitespace() -> String {
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, utf8[start].isASCIIWhitespace { start = utf8.index(after: start) }
        while end > start, utf8[utf8.index(before: end)].isASCIIWhitespace { end = utf8.index(before: end) }
        return String(self[start..<end])
    }

    /// The text with ASCII `A`–`Z` lowercased and everything else unchanged.
    public func asciiLowercased() -> String { String(self).asciiLowercased() }
}
