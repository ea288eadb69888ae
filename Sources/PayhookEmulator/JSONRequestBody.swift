import Foundation
import PayhookCore

/// Read access to a request body parsed by `JSONSerialization`, for the few fields the
/// emulator needs. The parsed value never leaves the handler (it is not `Sendable`).
struct JSONRequestBody {
    let root: [String: Any]

    /// `nil` unless the body is a JSON object.
    init?(_ body: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        root = object
    }

    /// A nested object of another body.
    init(root: [String: Any]) { self.root = root }

    func value(_ path: [String]) -> Any? {
        var current: Any? = root
        for key in path { current = (current as? [String: Any])?[key] }
        return current
    }

    func string(_ path: String...) -> String? { value(path) as? String }

    func array(_ path: String...) -> [Any]? { value(path) as? [Any] }

    /// A number as JSON text, or a string as sent (amounts come either way).
    func numberText(_ path: String...) -> String? {
        let found = value(path)
        if let text = found as? String { return text }
        guard let number = found as? NSNumber else { return nil }
        let double = number.doubleValue
        if double == double.rounded(), abs(double) < 1e15 { return String(Int64(double)) }
        // Swift prints the shortest text that round-trips, which is the decimal that was sent
        // for any realistic amount.
        return "\(double)"
    }

    /// The scalar at `path` as text (strings as they are, numbers and booleans as JSON text),
    /// or nil when absent or not a scalar.
    func scalarText(_ path: [String]) -> String? {
        switch value(path) {
        case let text as String: return text
        case let number as NSNumber:
            if Self.isBoolean(number) { return number.boolValue ? "true" : "false" }
            return numberTextValue(number)
        default: return nil
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

    /// Whether `path` holds a JSON integer.
    func isInteger(_ path: [String]) -> Bool {
        guard let number = value(path) as? NSNumber, !Self.isBoolean(number) else { return false }
        return number.doubleValue == number.doubleValue.rounded() && !"\(number)".contains(".")
    }

    /// `JSONSerialization` gives booleans as `NSNumber`s of type `c` (char).
    static func isBoolean(_ number: NSNumber) -> Bool { String(cString: number.objCType) == "c" }

    /// Whether `path` holds a JSON boolean.
    func isBoolean(_ path: [String], equalTo expected: Bool) -> Bool {
        guard let number = value(path) as? NSNumber, Self.isBoolean(number) else { return false }
        return number.boolValue == expected
    }

    private func numberTextValue(_ number: NSNumber) -> String {
        let double = number.doubleValue
        if double == double.rounded(), abs(double) < 1e15 { return String(Int64(double)) }
        return "\(double)"
    }

    /// The body in a canonical text form (keys sorted, no whitespace): equal for requests that
    /// differ only in key order or whitespace, which is how an idempotent replay is recognized.
    var fingerprint: [UInt8] { fingerprint(excluding: []) }

    /// The fingerprint without some top-level members: fields a client legitimately changes
    /// between attempts of the same request (PXP's `merchantTransactionDate`).
    ///
    /// Written by hand rather than with `JSONSerialization.data(…, .sortedKeys)`, which bridges
    /// to `NSDictionary` and sorts through `NSString` and was a third of the emulator's CPU per
    /// charge in bench/charges.
    func fingerprint(excluding keys: Set<String>) -> [UInt8] {
        var out = ""
        Self.canonical(keys.isEmpty ? root : root.filter { !keys.contains($0.key) }, into: &out)
        return Array(out.utf8)
    }

    private static func canonical(_ value: Any, into out: inout String) {
        switch value {
        case let object as [String: Any]:
            out += "{"
            for key in object.keys.sorted() {
                out += JSONString.quote(key) + ":"
                canonical(object[key] ?? NSNull(), into: &out)
                out += ","
            }
            out += "}"
        case let array as [Any]:
            out += "["
            for element in array {
                canonical(element, into: &out)
                out += ","
            }
            out += "]"
        case let text as String:
            out += JSONString.quote(text)
        case let number as NSNumber:
            out += number.description
        default:
            out += "null"
        }
    }
}
