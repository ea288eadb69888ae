/// A complete response, passed to the `respond` function an `HTTPHandler` receives.
///
/// The server sets `Content-Length` itself; a `content-length` or `transfer-encoding` header
/// given here is ignored, and a header whose name or value libmicrohttpd rejects (for example
/// one containing a line break) is dropped rather than sent.
public struct HTTPResponse: Sendable {
    /// HTTP status code; a value outside 200...599 is sent as 500.
    public var status: Int
    /// Header pairs, sent in this order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("content-type", "text/plain; charset=utf-8")],
                     body: Array(text.utf8))
    }

    /// An `application/json` response; the bytes are sent as given.
    public static func json(_ status: Int, _ jsonBytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("content-type", "application/json")], body: jsonBytes)
    }
}

/// Handles one request. Called on a server polling thread.
///
/// It must call `respond` exactly once, from any thread, now or later, and must not block for
/// long: while it runs, the polling thread serves no other connection. Work that waits (a
/// database commit) belongs elsewhere; call `respond` when it is done. Calls after the first,
/// after the handler timeout answered 503, or after the server stopped are dropped.
public typealias HTTPHandler = @Sendable (HTTPRequest, _ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void
