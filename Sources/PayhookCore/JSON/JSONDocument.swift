import Foundation

/// A validated JSON document kept as byte spans over its text: payhook's one JSON reader.
///
/// Verifiers read the few fields they need straight from the spans; ``JSONValue/parse(_:maxDepth:)``
/// builds its tree from them (``value(_:)``), so every reader of a body applies the same grammar,
/// duplicate-key, UTF-8, surrogate and depth rules and reaches the same verdict. Parsing fills one
/// array of fixed-size nodes, and a `String` exists only for a field someone reads: verifiers run
/// for every delivery on the ingress path, where building a whole tree (a `String` per key and
/// value, an array per container) was the largest part of verification.
///
/// Why one long file: the grammar's rules (depth, duplicate keys, UTF-8, surrogates) are checked
/// in one pass over the bytes, and the readers of the spans rely on exactly what it checked;
/// keeping both in one file keeps them from drifting apart.
///
/// ```swift
/// JSONValue.parse(body)?["type"]?.scalarText               // a String for every key and value
/// if let document = JSONDocument(body) {                    // spans only; one String, for "type"
///     let type = document.scalarText(document.member("type", of: document.root))
/// }
/// ```
package struct JSONDocument {
    /// A position in ``nodes``.
    package typealias Node = Int

    fileprivate enum Kind: UInt8 {
        case object, array, string, number, literalTrue, literalFalse, null
    }

    /// One value: its kind, its text span and, when it is an object member, its key's span.
    fileprivate struct Entry {
        let kind: Kind
        /// Strings only: the text holds escapes, so it must be decoded rather than copied.
        let escaped: Bool
        /// The key has no escapes and only ASCII bytes, so bytes compare as `String`s do.
        let keyIsPlain: Bool
        /// Strings: first byte after the opening quote; other kinds: first byte of the value.
        let start: Int
        /// Strings: the closing quote; other kinds: one past the last byte.
        var end: Int
        /// The node after this one's subtree (its next sibling, if it has one).
        var next: Node
        /// The key's text between its quotes; `keyStart == -1` outside objects.
        let keyStart: Int
        let keyEnd: Int
        let keyIsEscaped: Bool
    }

    private let bytes: [UInt8]
    private let entries: [Entry]

    /// The document's top-level value.
    package let root: Node = 0

    /// Parses a complete JSON document (RFC 8259), or returns `nil` for anything else: duplicate
    /// object keys, invalid UTF-8, lone surrogates, trailing content and nesting deeper than
    /// `maxDepth` all fail.
    package init?(_ bytes: [UInt8], maxDepth: Int = 64) {
        let parsed: [Entry]? = bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(bytes: buffer, maxDepth: maxDepth)
            do {
                try scanner.parseValue(depth: 0, key: nil)
                scanner.skipWhitespace()
                return scanner.index == buffer.count ? scanner.entries : nil
            } catch {
                return nil
            }
        }
        guard let parsed else { return nil }
        self.bytes = bytes
        self.entries = parsed
    }

    /// Whether `node` is an object.
    package func isObject(_ node: Node?) -> Bool {
        guard let node else { return false }
        return entries[node].kind == .object
    }

    /// The member named `key` when `node` is an object (as `JSONValue`'s subscript), else `nil`.
    package func member(_ key: String, of node: Node?) -> Node? {
        guard let node, entries[node].kind == .object else { return nil }
        var child = node + 1
        let end = entries[node].next
        while child < end {
            if keyEquals(entries[child], key) { return child }
            child = entries[child].next
        }
        return nil
    }

    /// Whether `node` is JSON `null`.
    package func isNull(_ node: Node?) -> Bool {
        guard let node else { return false }
        return entries[node].kind == .null
    }

    /// The elements of `node` when it is an array, else `nil`.
    package func elements(of node: Node?) -> [Node]? {
        guard let node, entries[node].kind == .array else { return nil }
        var elements: [Node] = []
        var child = node + 1
        while child < entries[node].next {
            elements.append(child)
            child = entries[child].next
        }
        return elements
    }

    /// As ``JSONValue/scalarText``: strings decoded, numbers as sent, `true`/`false`;
    /// `nil` for null, objects, arrays and a missing node.
    package func scalarText(_ node: Node?) -> String? {
        guard let node else { return nil }
        let entry = entries[node]
        switch entry.kind {
        case .string:
            return text(start: entry.start, end: entry.end, escaped: entry.escaped)
        case .number:
            return text(start: entry.start, end: entry.end, escaped: false)
        case .literalTrue: return "true"
        case .literalFalse: return "false"
        case .null, .object, .array: return nil
        }
    }

    /// The tree of `node` and everything under it, as ``JSONValue/parse(_:maxDepth:)`` returns it
    /// for the root: keys and strings decoded, numbers as sent, members in document order.
    package func value(_ node: Node) -> JSONValue {
        bytes.withUnsafeBufferPointer { all in value(node, in: all) }
    }

    /// Recursion is bounded by the `maxDepth` the document was parsed with.
    private func value(_ node: Node, in all: UnsafeBufferPointer<UInt8>) -> JSONValue {
        let entry = entries[node]
        switch entry.kind {
        case .object:
            var members: [(key: String, value: JSONValue)] = []
            var child = node + 1
            while child < entry.next {
                let member = entries[child]
                let key = JSONScanner.decode(
                    UnsafeBufferPointer(rebasing: all[member.keyStart..<member.keyEnd]), escaped: member.keyIsEscaped)
                members.append((key, value(child, in: all)))
                child = member.next
            }
            return .object(JSONObject(members))
        case .array:
            var elements: [JSONValue] = []
            var child = node + 1
            while child < entry.next {
                elements.append(value(child, in: all))
                child = entries[child].next
            }
            return .array(elements)
        case .string:
            return .string(JSONScanner.decode(UnsafeBufferPointer(rebasing: all[entry.start..<entry.end]), escaped: entry.escaped))
        case .number:
            return .number(JSONScanner.decode(UnsafeBufferPointer(rebasing: all[entry.start..<entry.end]), escaped: false))
        case .literalTrue: return .bool(true)
        case .literalFalse: return .bool(false)
        case .null: return .null
        }
    }

    /// Well-formed UTF-8 as the Unicode standard defines it (table 3-7): no overlong forms,
    /// no encoded surrogates, nothing above U+10FFFF; the rule `String(validating:)` applies.
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = bytes.count
        func continuation(_ offset: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            index + offset < count && range.contains(bytes[index + offset])
        }
        while index < count {
            let lead = bytes[index]
            switch lead {
            case 0x00...0x7F:
                index += 1
            case 0xC2...0xDF:
                guard continuation(1) else { return false }
                index += 2
            case 0xE0:
                guard continuation(1, 0xA0...0xBF), continuation(2) else { return false }
                index += 3
            case 0xE1...0xEC, 0xEE...0xEF:
                guard continuation(1), continuation(2) else { return false }
                index += 3
            case 0xED:
                guard continuation(1, 0x80...0x9F), continuation(2) else { return false }
                index += 3
            case 0xF0:
                guard continuation(1, 0x90...0xBF), continuation(2), continuation(3) else { return false }
                index += 4
            case 0xF1...0xF3:
                guard continuation(1), continuation(2), continuation(3) else { return false }
                index += 4
            case 0xF4:
                guard continuation(1, 0x80...0x8F), continuation(2), continuation(3) else { return false }
                index += 4
            default:
                return false
            }
        }
        return true
    }

    private func keyEquals(_ entry: Entry, _ key: String) -> Bool {
        if entry.keyIsPlain {
            let length = entry.keyEnd - entry.keyStart
            var key = key
            return key.withUTF8 { wanted in
                wanted.count == length && bytes.withUnsafeBufferPointer { all in
                    memoryEquals(UnsafeBufferPointer(rebasing: all[entry.keyStart..<entry.keyEnd]), wanted)
                }
            }
        }
        // Escapes or non-ASCII: compare as Strings, whose equality is what JSONObject uses.
        return text(start: entry.keyStart, end: entry.keyEnd, escaped: entry.keyIsEscaped) == key
    }

    private func text(start: Int, end: Int, escaped: Bool) -> String {
        bytes.withUnsafeBufferPointer { all in
            JSONScanner.decode(UnsafeBufferPointer(rebasing: all[start..<end]), escaped: escaped)
        }
    }
}

private func memoryEquals(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    guard let left = a.baseAddress, let right = b.baseAddress else { return true }  // both empty
    return memcmp(left, right, a.count) == 0
}

private struct JSONScanFailure: Error {}

/// The validating pass behind ``JSONDocument``: a recursive descent bounded by `maxDepth`, so
/// hostile input cannot exhaust the stack.
private struct JSONScanner {
    typealias Entry = JSONDocument.Entry

    struct Key {
        let start: Int
        let end: Int
        let escaped: Bool
        let ascii: Bool
        var isPlain: Bool { !escaped && ascii }
    }

    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0
    var entries: [Entry] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        // A node per 8 bytes covers webhook bodies without regrowing.
        entries.reserveCapacity(min(bytes.count / 8 + 4, 4096))
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func expect(_ literal: StaticString) throws(JSONScanFailure) {
        let count = literal.utf8CodeUnitCount
        let start = literal.utf8Start
        for offset in 0..<count {
            guard peek() == start[offset] else { throw JSONScanFailure() }
            index += 1
        }
    }

    private mutating func append(_ kind: JSONDocument.Kind, start: Int, end: Int, escaped: Bool = false, key: Key?) {
        entries.append(Entry(
            kind: kind, escaped: escaped, keyIsPlain: key?.isPlain ?? false, start: start, end: end,
            next: entries.count + 1, keyStart: key?.start ?? -1, keyEnd: key?.end ?? -1,
            keyIsEscaped: key?.escaped ?? false))
    }

    mutating func parseValue(depth: Int, key: Key?) throws(JSONScanFailure) {
        guard depth <= maxDepth else { throw JSONScanFailure() }
        skipWhitespace()
        guard let byte = peek() else { throw JSONScanFailure() }
        let start = index
        switch byte {
        case UInt8(ascii: "{"): try parseObject(depth: depth, key: key)
        case UInt8(ascii: "["): try parseArray(depth: depth, key: key)
        case UInt8(ascii: "\""):
            let string = try scanString()
            append(.string, start: string.start, end: string.end, escaped: string.escaped, key: key)
        case UInt8(ascii: "t"): try expect("true"); append(.literalTrue, start: start, end: index, key: key)
        case UInt8(ascii: "f"): try expect("false"); append(.literalFalse, start: start, end: index, key: key)
        case UInt8(ascii: "n"): try expect("null"); append(.null, start: start, end: index, key: key)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanNumber()
            append(.number, start: start, end: index, key: key)
        default: throw JSONScanFailure()
        }
    }

    private mutating func parseObject(depth: Int, key: Key?) throws(JSONScanFailure) {
        let node = entries.count
        append(.object, start: index, end: index, key: key)
        index += 1
        // Duplicate keys are refused. Small objects check by scanning the members parsed so
        // far; past this size a set keeps the check linear for hostile bodies with many keys.
        let scanLimit = 16
        var memberCount = 0
        var seenKeys: Set<String>?
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            close(node)
            return
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw JSONScanFailure() }
            let scanned = try scanString()
            let memberKey = Key(start: scanned.start, end: scanned.end, escaped: scanned.escaped, ascii: scanned.ascii)
            skipWhitespace()
            try expect(":")
            let member = entries.count
            try parseValue(depth: depth + 1, key: memberKey)
            if var seen = seenKeys {
                seenKeys = nil  // keep the set uniquely referenced while inserting
                guard seen.insert(keyText(start: memberKey.start, end: memberKey.end, escaped: memberKey.escaped)).inserted
                else { throw JSONScanFailure() }
                seenKeys = seen
            } else {
                var other = node + 1
                while other < member {
                    guard !sameKey(entries[other], memberKey) else { throw JSONScanFailure() }
                    other = entries[other].next
                }
                if memberCount == scanLimit {
                    var seen = Set<String>()
                    other = node + 1
                    while other <= member {
                        let entry = entries[other]
                        seen.insert(keyText(start: entry.keyStart, end: entry.keyEnd, escaped: entry.keyIsEscaped))
                        other = entries[other].next
                    }
                    seenKeys = seen
                }
            }
            memberCount += 1
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; close(node); return
            default: throw JSONScanFailure()
            }
        }
    }

    private mutating func parseArray(depth: Int, key: Key?) throws(JSONScanFailure) {
        let node = entries.count
        append(.array, start: index, end: index, key: key)
        index += 1
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            close(node)
            return
        }
        while true {
            try parseValue(depth: depth + 1, key: nil)
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; close(node); return
            default: throw JSONScanFailure()
            }
        }
    }

    /// Records where a container ends: its text, and the first node after its subtree.
    private mutating func close(_ node: Int) {
        entries[node].end = index
        entries[node].next = entries.count
    }

    private func sameKey(_ entry: Entry, _ key: Key) -> Bool {
        if entry.keyIsPlain && key.isPlain {
            return memoryEquals(
                UnsafeBufferPointer(rebasing: bytes[entry.keyStart..<entry.keyEnd]),
                UnsafeBufferPointer(rebasing: bytes[key.start..<key.end]))
        }
        // A non-ASCII key can equal another spelled differently (String equality is canonical
        // equivalence, which is how JSONObject finds a member), so these compare as Strings.
        return keyText(start: entry.keyStart, end: entry.keyEnd, escaped: entry.keyIsEscaped)
            == keyText(start: key.start, end: key.end, escaped: key.escaped)
    }

    private func keyText(start: Int, end: Int, escaped: Bool) -> String {
        Self.decode(UnsafeBufferPointer(rebasing: bytes[start..<end]), escaped: escaped)
    }

    private mutating func scanNumber() throws(JSONScanFailure) {
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard let first = peek(), isDigit(first) else { throw JSONScanFailure() }
        index += 1
        if first != UInt8(ascii: "0") {
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard let byte = peek(), isDigit(byte) else { throw JSONScanFailure() }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let byte = peek(), isDigit(byte) else { throw JSONScanFailure() }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Validates a string from its opening quote; returns its text span (without quotes).
    private mutating func scanString() throws(JSONScanFailure) -> (start: Int, end: Int, escaped: Bool, ascii: Bool) {
        index += 1
        let start = index
        var escaped = false
        var ascii = true
        while index < bytes.count {
            // The run of plain bytes first, with the cursor in a local: most of a webhook body
            // is string text, and stepping `self.index` byte by byte made this loop half of
            // the parse (bench/VerifyBench profile).
            var cursor = index
            if let base = bytes.baseAddress {
                // Eight bytes at a time while none of them needs a look.
                let raw = UnsafeRawPointer(base)
                while cursor + 8 <= bytes.count,
                      !Self.mayHoldSpecialByte(raw.loadUnaligned(fromByteOffset: cursor, as: UInt64.self)) {
                    cursor += 8
                }
            }
            while cursor < bytes.count {
                let byte = bytes[cursor]
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { break }
                cursor += 1
            }
            index = cursor
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let end = index
                index += 1
                // Escapes are ASCII and decode to whole characters, so the raw span is valid
                // UTF-8 exactly when the decoded text is.
                if !ascii, !JSONDocument.isValidUTF8(UnsafeBufferPointer(rebasing: bytes[start..<end])) {
                    throw JSONScanFailure()
                }
                return (start, end, escaped, ascii)
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                index += 1
                try scanEscape()
                continue
            }
            if byte < 0x20 { throw JSONScanFailure() }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        throw JSONScanFailure()
    }

    /// Whether any of the eight bytes in `word` ends a plain run in a string: a quote, a
    /// backslash, a control byte (below 0x20) or a non-ASCII byte. Exact for "none": the
    /// bit tricks (a zero byte shows as a borrow into its top bit) never miss a byte, and a
    /// word they flag is simply scanned byte by byte.
    static func mayHoldSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> Bool { (value &- ones) & ~value & highBits != 0 }
        if word & highBits != 0 { return true }  // non-ASCII
        if (word &- 0x20 &* ones) & ~word & highBits != 0 { return true }  // below 0x20 (all bytes < 0x80 here)
        return hasZeroByte(word ^ (UInt64(UInt8(ascii: "\"")) &* ones))
            || hasZeroByte(word ^ (UInt64(UInt8(ascii: "\\")) &* ones))
    }

    private mutating func scanEscape() throws(JSONScanFailure) {
        guard let byte = peek() else { throw JSONScanFailure() }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            let scalar = try scanHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                try expect("\\u")
                let low = try scanHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONScanFailure() }
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONScanFailure()  // a lone low surrogate is no scalar
            }
        default:
            throw JSONScanFailure()
        }
    }

    private mutating func scanHex4() throws(JSONScanFailure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw JSONScanFailure() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Self.hexDigit(bytes[index]) else { throw JSONScanFailure() }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// A validated string's text; escapes resolved when `escaped`.
    static func decode(_ text: UnsafeBufferPointer<UInt8>, escaped: Bool) -> String {
        guard escaped else { return String(decoding: text, as: UTF8.self) }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(text.count)
        var index = 0
        func hex4(at offset: Int) -> UInt32 {
            var value: UInt32 = 0
            for digit in text[offset..<(offset + 4)] { value = value << 4 | (hexDigit(digit) ?? 0) }
            return value
        }
        while index < text.count {
            let byte = text[index]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                index += 1
                continue
            }
            let kind = text[index + 1]
            index += 2
            switch kind {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(at: index)
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    let low = hex4(at: index + 2)
                    index += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                // Validated by the scanner: never a lone surrogate, so always a scalar.
                if let unicode = Unicode.Scalar(scalar) {
                    utf8.append(contentsOf: unicode.utf8)
                }
            default: utf8.append(kind)  // `"`, `\`, `/`
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }
}
