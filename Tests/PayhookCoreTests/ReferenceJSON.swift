import PayhookCore

/// A second, plainly written JSON reader, for the differential tests only.
///
/// Production reads JSON through ``JSONDocument`` alone, and ``JSONValue`` is built from its
/// spans, so comparing those two checks the tree but not the rules. This recursive-descent
/// parser applies the same rules (grammar, duplicate keys, UTF-8, surrogates, depth) on its own,
/// so a mistake in the span reader's fast paths shows up as a disagreement.
enum ReferenceJSON {
    /// A complete JSON document (RFC 8259) as a tree, or `nil` for anything else.
    static func parse(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONValue? {
        var parser = ReferenceParser(bytes: bytes, maxDepth: maxDepth)
        do {
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            return parser.index == bytes.count ? value : nil
        } catch {
            return nil
        }
    }
}

private struct JSONParseFailure: Error {}

/// A recursive-descent parser over raw bytes; recursion is bounded by `maxDepth`, so hostile
/// input cannot exhaust the stack.
private struct ReferenceParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
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

    private mutating func expect(_ literal: String) throws(JSONParseFailure) {
        for byte in literal.utf8 {
            guard peek() == byte else { throw JSONParseFailure() }
            index += 1
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseFailure) -> JSONValue {
        guard depth <= maxDepth else { throw JSONParseFailure() }
        skipWhitespace()
        guard let byte = peek() else { throw JSONParseFailure() }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw JSONParseFailure()
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONParseFailure) -> JSONValue {
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        // Duplicate keys are refused. Small objects check by scanning; past this size a set
        // keeps the check linear, so a hostile body with many keys cannot make it quadratic.
        let scanLimit = 16
        var seenKeys: Set<String>?
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw JSONParseFailure() }
            let key = try parseString()
            skipWhitespace()
            try expect(":")
            let value = try parseValue(depth: depth + 1)
            if var seen = seenKeys {
                seenKeys = nil  // keep the set uniquely referenced while inserting
                guard seen.insert(key).inserted else { throw JSONParseFailure() }
                seenKeys = seen
            } else {
                guard !members.contains(where: { $0.key == key }) else { throw JSONParseFailure() }
                if members.count == scanLimit { seenKeys = Set(members.map(\.key) + [key]) }
            }
            members.append((key, value))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(JSONObject(members))
            default: throw JSONParseFailure()
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseFailure) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw JSONParseFailure()
            }
        }
    }

    private mutating func parseNumber() throws(JSONParseFailure) -> String {
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard let first = peek(), isDigit(first) else { throw JSONParseFailure() }
        index += 1
        if first != UInt8(ascii: "0") {
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard let byte = peek(), isDigit(byte) else { throw JSONParseFailure() }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let byte = peek(), isDigit(byte) else { throw JSONParseFailure() }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func parseString() throws(JSONParseFailure) -> String {
        index += 1
        // Fast path: most strings have no escapes, so they become a String straight from the
        // input bytes, without a byte-by-byte copy (this parser sits on the ingress hot path).
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: bytes[start..<index], as: UTF8.self) else { throw JSONParseFailure() }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            index += 1
        }
        var utf8 = Array(bytes[start..<index])
        while true {
            guard let byte = peek() else { throw JSONParseFailure() }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else { throw JSONParseFailure() }
                return text
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0x00..<0x20:
                throw JSONParseFailure()
            default:
                utf8.append(byte)
            }
        }
    }

    private mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONParseFailure) {
        guard let byte = peek() else { throw JSONParseFailure() }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                try expect("\\u")
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseFailure() }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw JSONParseFailure() }
            utf8.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw JSONParseFailure()
        }
    }

    private mutating func parseHex4() throws(JSONParseFailure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw JSONParseFailure() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw JSONParseFailure()
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
