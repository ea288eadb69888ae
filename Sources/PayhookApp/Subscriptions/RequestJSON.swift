import Foundation

/// A parsed admin request body that keeps JSON's types apart: `true` is not `1`, and `19.99` is
/// not an integer. `JSONSerialization` blurs both (everything is an `NSNumber`), and money in
/// minor units must be an exact integer.
enum RequestJSON: Decodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([RequestJSON])
    case object([String: RequestJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null; return }
        if let flag = try? container.decode(Bool.self) { self = .bool(flag); return }
        if let integer = try? container.decode(Int64.self) { self = .integer(integer); return }
        if let number = try? container.decode(Double.self) { self = .number(number); return }
        if let text = try? container.decode(String.self) { self = .string(text); return }
        if let array = try? container.decode([RequestJSON].self) { self = .array(array); return }
        self = .object(try container.decode([String: RequestJSON].self))
    }

    /// Parses a body that must be one JSON object.
    static func object(_ body: [UInt8]) -> [String: RequestJSON]? {
        guard case .object(let members)? = try? JSONDecoder().decode(RequestJSON.self, from: Data(body)) else { return nil }
        return members
    }

    /// True for a body of only whitespace.
    static func isBlank(_ body: [UInt8]) -> Bool {
        body.allSatisfy { $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }
    }

    /// The kind of value, for error messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer: "an integer"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
