public import Foundation

/// A value in a structured log line.
public enum LogValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, CustomStringConvertible
{
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(_ value: Int) { self = .int(Int64(value)) }

    public var description: String {
        switch self {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .bool(let b): return String(b)
        }
    }
}

/// Structured logger: one JSON object per line, dotted keys (`inbound_event.id`).
///
/// It is a value passed to whoever logs, never a global, so tests can capture lines and
/// components can carry their own context (`logger.with(["provider": "adyen"])`).
/// Callers must never put secrets, card data or request bodies into fields.
public struct Logger: Sendable {
    public enum Level: String, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        var rank: Int {
            switch self {
            case .debug: 0
            case .info: 1
            case .warning: 2
            case .error: 3
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// Receives each finished line (without the trailing newline). Called on the logging thread.
    public typealias Sink = @Sendable (String) -> Void

    private let sink: Sink
    private let minimumLevel: Level
    private let context: [String: LogValue]
    private let clock: @Sendable () -> Date

    public init(minimumLevel: Level = .info, clock: @escaping @Sendable () -> Date = { Date() }, sink: @escaping Sink) {
        self.sink = sink
        self.minimumLevel = minimumLevel
        self.context = [:]
        self.clock = clock
    }

    private init(copying other: Logger, context: [String: LogValue]) {
        self.sink = other.sink
        self.minimumLevel = other.minimumLevel
        self.clock = other.clock
        self.context = context
    }

    /// A logger that drops everything; for tests and tools that must stay quiet.
    public static let silent = Logger(minimumLevel: .error) { _ in }

    /// A logger whose lines also carry `fields`.
    public func with(_ fields: [String: LogValue]) -> Logger {
        Logger(copying: self, context: context.merging(fields) { _, new in new })
    }

    public func debug(_ message: String, _ fields: [String: LogValue] = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: LogValue] = [:]) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: LogValue] = [:]) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: LogValue] = [:]) { log(.error, message, fields) }

    public func log(_ level: Level, _ message: String, _ fields: [String: LogValue] = [:]) {
        guard level >= minimumLevel else { return }
        // A fast path beside JSONOutput, the one writer: every log line goes through here, so
        // the line is appended to directly rather than built as a tree of values first. Keys are
        // sorted and every value is a scalar, so there is nothing else it needs to handle.
        var line = "{\"ts\":\(JSONString.quote(Self.timestamp(clock()))),\"level\":\"\(level.rawValue)\",\"msg\":\(JSONString.quote(message))"
        let all = context.merging(fields) { _, new in new }
        for key in all.keys.sorted() {
            line += ",\(JSONString.quote(key)):"
            switch all[key]! {
            case .string(let s): line += JSONString.quote(s)
            case .int(let i): line += String(i)
            case .double(let d): line += d.isFinite ? String(d) : JSONString.quote(String(d))
            case .bool(let b): line += b ? "true" : "false"
            }
        }
        line += "}"
        sink(line)
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
