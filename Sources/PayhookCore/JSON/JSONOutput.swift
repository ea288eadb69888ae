package import Foundation

/// The one JSON writer: a value built in code (CLI and admin API output, the emulator's
/// provider documents, the provider clients' request bodies), rendered compactly with object
/// members in the order they were given.
///
/// Why not `JSONSerialization`: it reorders keys and turns numbers into `NSNumber`s whose text
/// may change (`100.10` can come back as `100.09999999999999`); operators diff and grep this
/// output, and the emulator's amounts must reach the decoders digit for digit.
package enum JSONOutput: Sendable, Equatable {
    case object([Member])
    case array([JSONOutput])
    case string(String)
    case int(Int64)
    /// A number written as exactly this text, such as an amount `100.10`; the caller vouches
    /// that it is a JSON number.
    case number(String)
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

    /// An object whose members with no value are left out, not written as `null` (a provider
    /// request's optional fields).
    package static func object(omittingAbsent members: [(String, JSONOutput?)]) -> JSONOutput {
        .object(members.compactMap { key, value in value.map { Member(key, $0) } })
    }

    /// A string, or `null` when absent.
    package static func optional(_ text: String?) -> JSONOutput { text.map { .string($0) } ?? .null }
    /// An int, or `null` when absent.
    package static func optional(_ number: Int64?) -> JSONOutput { number.map { .int($0) } ?? .null }
    /// An RFC 3339 UTC timestamp with milliseconds, or `null`.
    package static func timestamp(_ date: Date?) -> JSONOutput { date.map { .string(Self.format($0)) } ?? .null }

    /// Compact JSON text, as UTF-8 bytes (an HTTP body).
    package var bytes: [UInt8] { Array(rendered.utf8) }

    /// Compact JSON text.
    package var rendered: String {
        switch self {
        case .object(let members):
            "{" + members.map { JSONString.quote($0.key) + ":" + $0.value.rendered }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .string(let text): JSONString.quote(text)
        case .int(let number): String(number)
        case .number(let text): text
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
