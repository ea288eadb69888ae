/// A JSON value as the verifiers need it: numbers keep the exact text that was sent.
///
/// Adyen signs `amount.value` as the digits it put on the wire, and Mercado Pago ids can
/// exceed what a `Double` holds exactly, so going through `JSONSerialization` (which turns
/// `1130` into an `NSNumber` whose text may become `1130.0`) could change signed bytes.
public enum JSONValue: Sendable, Equatable {
    case object(JSONObject)
    case array([JSONValue])
    case string(String)
    /// The number's literal text, validated against the JSON grammar but not converted.
    case number(String)
    case bool(Bool)
    case null

    /// The member named `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The value as an exact integer: a number written without fraction or exponent that fits
    /// in 64 bits; nil for anything else (`19.99`, `1e3`, `"1999"`, `true`). Money in minor units
    /// must be exactly this, never a rounded double.
    public var exactInteger: Int64? {
        guard case .number(let text) = self, !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") })
        else { return nil }
        return Int64(text)
    }

    /// The value as the text a provider would sign: strings as they are, numbers as sent,
    /// booleans as `true`/`false`; `nil` for null, objects and arrays.
    public var scalarText: String? {
        switch self {
        case .string(let text): text
        case .number(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .null, .object, .array: nil
        }
    }

    /// Parses a complete JSON document (RFC 8259), or returns `nil` for anything else.
    ///
    /// Stricter than most parsers on purpose: duplicate object keys, invalid UTF-8, lone
    /// surrogates, trailing content and nesting deeper than `maxDepth` all fail, so that two
    /// parsers can never disagree about what a signed field contained.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONValue? {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        do {
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            return parser.index == bytes.count ? value : nil
        } catch {
            return nil
        }
    }
}

/// An object's members in document order.
///
/// Webhook objects are small, so an array with linear lookup is cheaper to build than a
/// dictionary (no hashing, one allocation); this parser runs on the ingress hot path for every
/// delivery. Equality ignores member order, as JSON's does.
public struct JSONObject: Sendable, Equatable {
    public fileprivate(set) var members: [(key: String, value: JSONValue)] = []

    /// An object of `members`, for callers that build a document to validate it the way a
    /// parsed one is (the CLI turns its flags into the admin API's body). Keys must be unique.
    public init(_ members: [(key: String, value: JSONValue)]) {
        self.members = members
    }

    init() {}

    /// The members' names in document order.
    public var keys: [String] { members.map(\.key) }

    public subscript(key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count && lhs.members.allSatisfy { rhs[$0.key] == $0.value }
    }
}

private struct JSONParseFailure: Error {}

/// A recursive-descent parser over raw bytes; recursion is bounded by `maxDepth`, so hostile
/// input cannot exhaust the stack.
private struct JSONParser {
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
        var object = JSONObject()
        // Duplicate keys are refused. Small objects check by scanning; past this size a set
        // keeps the check linear, so a hostile body with many keys cannot make it quadratic.
        let scanLimit = 16
        var seenKeys: Set<String>?
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return .object(object)
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
                guard !object.members.contains(where: { $0.key == key }) else { throw JSONParseFailure() }
                if object.members.count == scanLimit { seenKeys = Set(object.members.map(\.key) + [key]) }
            }
            object.members.append((key, value))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(object)
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
