public import PayhookCore

/// One complete HTTP request as the server received it, handed to an `HTTPHandler`.
///
/// Signature verification covers raw bytes, so the body and the query string are kept exactly
/// as sent. The path is the one libmicrohttpd decoded (percent-escapes resolved), which is what
/// routing wants; use `rawQuery` for anything signed.
public struct HTTPRequest: Sendable, LowercasedHeaders {
    /// The request method as sent, e.g. `"POST"`.
    public let method: String
    /// URL path without the query, percent-decoded, e.g. `"/webhooks/adyen/acme"`.
    public let path: String
    /// The query string exactly as sent, still percent-encoded, without `?`; `""` if none.
    public let rawQuery: String
    /// Header pairs in arrival order, names lowercased.
    public let headers: [(name: String, value: String)]
    /// The complete body; never partial (a truncated upload never reaches the handler).
    public let body: [UInt8]
    /// The peer's IP address as text, e.g. `"127.0.0.1"` or `"::1"`; `""` if unknown.
    public let remoteAddress: String

    /// Builds a request; the server does this, and tests of handlers may too.
    /// Header names are lowercased here so that `header(_:)` is case-insensitive.
    public init(
        method: String, path: String, rawQuery: String = "",
        headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.headers = headers.map { (name: $0.name.asciiLowercased(), value: $0.value) }
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Internal initializer for headers already lowercased by the server, to skip a copy.
    init(
        method: String, path: String, rawQuery: String,
        lowercasedHeaders: [(name: String, value: String)], body: [UInt8], remoteAddress: String
    ) {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.headers = lowercasedHeaders
        self.body = body
        self.remoteAddress = remoteAddress
    }
}
