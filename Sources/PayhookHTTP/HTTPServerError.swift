/// Why the HTTP server could not be configured or started.
///
/// Descriptions name the failing setting or address and never contain request data or
/// TLS key material.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// A configuration value is out of range or inconsistent.
        case invalidConfiguration
        /// The TLS certificate or key could not be read or was rejected, or libmicrohttpd lacks TLS.
        case tlsConfiguration
        /// libmicrohttpd refused to start, usually because the address could not be bound.
        case startFailed
        /// `start()` was called twice, or after `stop()`.
        case invalidState
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "HTTPServerError.\(code.rawValue): \(message)" }
}
