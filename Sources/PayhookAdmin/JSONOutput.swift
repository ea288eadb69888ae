package import Foundation
import PayhookCore

/// A JSON value built in code for CLI and admin API output, rendered with members in the order
/// they were given.
///
/// Why not `JSONSerialization`: it reorders keys and turns integers into `NSNumber`s whose text
/// may change; operators diff and grep this output, so it must be stable.
package enum JSONOutput: Sendable, Equatable {
    case object([Member])
    case array([JSONOutput])
    case string(String)
    case int(Int64)
    case bool(Bool)
    case null
    /// Text that is already JSON, such as `jsonb::text` from PostgreSQL, embedded as it is.
    case raw(String)

    /// One object member; members keep their order.
    package struct Member: Sendable, Equatable {
        let key: String
        let value: JSONOutput
        package init(_ key: String, _ value: JSONOutput) {
            self.key = key
            self.value = value
        }
    }

    /// A string, or `null` when absent.
    package static func optional(_ text: String?) -> JSONOutput { text.map { .string($0) } ?? .null }
    /// An int, or `null` when absent.
    package static func optional(_ number: Int64?) -> JSONOutput { number.map { .int($0) } ?? .null }
    /// An RFC 3339 UTC timestamp with milliseconds, or `null`.
    package static func timestamp(_ date: Date?) -> JSONOutput { date.map { .string(Self.format($0)) } ?? .null }

    /// Compact JSON text.
    package var rendered: String {
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
    package static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
