/// A configuration value that must never be printed: its description is always redacted, so a
/// secret that slips into a log line, an error or `dump()` shows as `<redacted>`. Reflection
/// (`dump`, `Mirror`) sees no children: without `customMirror`, `dump` lists stored properties
/// and would print `value`.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
