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
    /// readers can never disagree about what a signed field contained. The document is read by
    /// ``JSONDocument``, the verifiers' reader, and the tree is built from its spans, so the
    /// verifiers and the decoders accept and refuse the same bodies by construction.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONValue? {
        JSONDocument(bytes, maxDepth: maxDepth).map { $0.value($0.root) }
    }
}

/// An object's members in document order.
///
/// Webhook objects are small, so an array with linear lookup is cheaper to build than a
/// dictionary (no hashing, one allocation); decoders build one for every delivery they
/// process. Equality ignores member order, as JSON's does.
public struct JSONObject: Sendable, Equatable {
    public private(set) var members: [(key: String, value: JSONValue)] = []

    /// An object of `members`, for callers that build a document to validate it the way a
    /// parsed one is (the CLI turns its flags into the admin API's body). Keys must be unique.
    public init(_ members: [(key: String, value: JSONValue)]) {
        self.members = members
    }

    /// The members' names in document order.
    public var keys: [String] { members.map(\.key) }

    public subscript(key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count && lhs.members.allSatisfy { rhs[$0.key] == $0.value }
    }
}
