import Foundation
import PayhookCore

/// A JSON value built in code for CLI and admin API output, rendered with members in the order
/// they were given.
///
/// Why not `JSONSerialization`: it reorders keys and turns integers into `NSNumber`s whose text
/// may change; operators diff and grep this output, so it must be stable.
enum JSONDocument: Sendable, Equatable {
    case object([Member])
    case array([JSONDocument])
    case string(String)
    case int(Int64)
    case bool(Bool)
    case null
    /// Text that is already JSON, such as `jsonb::text` from PostgreSQL, embedded as it is.
    case raw(String)

    /// One object member; members keep their order.
    struct Member: Sendable, Equatable {
        let key: String
        let value: JSONDocument
        init(_ key: String, _ value: JSONDocument) {
            self.key = key
            self.value = value
        }
    }

    /// A string, or `null` when absent.
    static func optional(_ text: String?) -> JSONDocument { text.map { .string($0) } ?? .null }
    /// An int, or `null` when absent.
    static func optional(_ number: Int64?) -> JSONDocument { number.map { .int($0) } ?? .null }
    /// An RFC 3339 UTC timestamp with milliseconds, or `null`.
    static func timestamp(_ date: Date?) -> JSONDocument { date.map { .string(Self.format($0)) } ?? .null }

    /// Compact JSON text.
    var rendered: String {
        switch self {
        case .object(let members):
            "{" + members.map { JSONString.quote($0.key) + ":" + $0.value.rendered }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .string(let text): JSONString.quote(text)
        case .int(let number): String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        case .raw(let json): json
        }
    }

    /// `2025-03-20T12:00:00.123Z`: one fixed format for every timestamp an operator reads.
    static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
