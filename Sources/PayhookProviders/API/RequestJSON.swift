import PayhookCore

/// A request body the provider clients write: members keep their order and numbers are the
/// exact text given, so an amount such as `100.10` goes on the wire digit for digit (never
/// through `Double`).
indirect enum RequestJSON: Sendable {
    case string(String)
    /// Literal JSON number text; the caller guarantees the grammar (Money's decimal string or
    /// an integer's description).
    case number(String)
    case bool(Bool)
    case object([(String, RequestJSON?)])
    case array([RequestJSON])

    /// The UTF-8 text; object members whose value is `nil` are left out.
    var bytes: [UInt8] { Array(text.utf8) }

    var text: String {
        switch self {
        case .string(let value): JSONString.quote(value)
        case .number(let value): value
        case .bool(let flag): flag ? "true" : "false"
        case .array(let items): "[" + items.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.compactMap { key, value in value.map { JSONString.quote(key) + ":" + $0.text } }
                .joined(separator: ",") + "}"
        }
    }
}
