import PayhookCore

/// Read access to a request body, for the few fields the emulator needs.
///
/// Read with payhook's strict reader (``JSONValue``): JSON's types stay apart (`true` is not a
/// number) and numbers keep the text that was sent until a caller asks for them as a value.
struct JSONRequestBody {
    let root: JSONObject

    /// `nil` unless the body is a JSON object.
    init?(_ body: [UInt8]) {
        guard case .object(let object)? = JSONValue.parse(body) else { return nil }
        root = object
    }

    /// A nested object of another body.
    init(root: JSONObject) { self.root = root }

    func value(_ path: [String]) -> JSONValue? {
        var current: JSONValue? = .object(root)
        for key in path { current = current?[key] }
        return current
    }

    func string(_ path: String...) -> String? { string(path) }

    func string(_ path: [String]) -> String? {
        guard case .string(let text)? = value(path) else { return nil }
        return text
    }

    func array(_ path: String...) -> [JSONValue]? {
        guard case .array(let elements)? = value(path) else { return nil }
        return elements
    }

    /// Whether `path` holds a JSON object.
    func isObject(_ path: [String]) -> Bool {
        guard case .object? = value(path) else { return false }
        return true
    }

    /// Whether `path` holds a JSON number.
    func isNumber(_ path: [String]) -> Bool {
        guard case .number? = value(path) else { return false }
        return true
    }

    /// A number as JSON text, or a string as sent (amounts come either way).
    func numberText(_ path: String...) -> String? {
        switch value(path) {
        case .string(let text)?: text
        case .number(let text)?: Self.numberValueText(text)
        default: nil
        }
    }

    /// The scalar at `path` as text (strings as they are, numbers and booleans as JSON text),
    /// or nil when absent or not a scalar.
    func scalarText(_ path: [String]) -> String? {
        switch value(path) {
        case .string(let text)?: text
        case .number(let text)?: Self.numberValueText(text)
        case .bool(let flag)?: flag ? "true" : "false"
        default: nil
        }
    }

    /// The scalars at `paths` (dotted), for ``ExecutedCharge/requestFields``.
    func fields(_ paths: [String], under prefix: [String] = []) -> [String: String] {
        var out: [String: String] = [:]
        for path in paths {
            if let text = scalarText(prefix + path.split(separator: ".").map(String.init)) { out[path] = text }
        }
        return out
    }

    /// Whether `path` holds a JSON integer: a number written without fraction or exponent.
    func isInteger(_ path: [String]) -> Bool {
        guard case .number(let text)? = value(path) else { return false }
        return !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
    }

    /// Whether `path` holds a JSON boolean.
    func isBoolean(_ path: [String], equalTo expected: Bool) -> Bool {
        value(path) == .bool(expected)
    }

    /// A number's value as text: integral values below 10^15 as integers (`100.0` is `100`),
    /// others as the shortest text that round-trips through a `Double`, which is the decimal
    /// that was sent for any realistic amount (`100.10` is `100.1`).
    private static func numberValueText(_ text: String) -> String? {
        guard let double = Double(text) else { return nil }
        if double == double.rounded(), abs(double) < 1e15 { return String(Int64(double)) }
        return "\(double)"
    }

    /// The body in a canonical text form (keys sorted, no whitespace, numbers by value): equal
    /// for requests that differ only in key order, whitespace or a number's spelling, which is
    /// how an idempotent replay is recognized.
    var fingerprint: [UInt8] { fingerprint(excluding: []) }

    /// The fingerprint without some top-level members: fields a client legitimately changes
    /// between attempts of the same request (PXP's `merchantTransactionDate`).
    func fingerprint(excluding keys: Set<String>) -> [UInt8] {
        var out = ""
        let kept = keys.isEmpty ? root : JSONObject(root.members.filter { !keys.contains($0.key) })
        Self.canonical(.object(kept), into: &out)
        return Array(out.utf8)
    }

    private static func canonical(_ value: JSONValue, into out: inout String) {
        switch value {
        case .object(let object):
            out += "{"
            for member in object.members.sorted(by: { $0.key < $1.key }) {
                out += JSONString.quote(member.key) + ":"
                canonical(member.value, into: &out)
                out += ","
            }
            out += "}"
        case .array(let elements):
            out += "["
            for element in elements {
                canonical(element, into: &out)
                out += ","
            }
            out += "]"
        case .string(let text):
            out += JSONString.quote(text)
        case .number(let text):
            out += numberValueText(text) ?? text
        case .bool(let flag):
            out += flag ? "true" : "false"
        case .null:
            out += "null"
        }
    }
}
