/// A complete response, passed to the `respond` function an `HTTPHandler` receives.
///
/// The server sets `Content-Length` itself; a `content-length` or `transfer-encoding` header
/// given here is ignored, and a header whose name or value libmicrohttpd rejects (for example
/// one containing a line break) is dropped rather than sent.
public struct HTTPResponse: Sendable {
    /// HTTP status code; a value outside 200...599 is sent as 500.
    public var status: Int { didSet { prepared = nil } }
    /// Header pairs, sent in this order.
    public var headers: [(name: String, value: String)] { didSet { prepared = nil } }
    public var body: [UInt8] { didSet { prepared = nil } }
    /// libmicrohttpd's copy of this response, built once by ``reusable()``; any change to the
    /// response drops it, so what is sent always matches the fields.
    private(set) var prepared: PreparedResponse?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
        self.prepared = nil
    }

    /// The same response, with libmicrohttpd's copy of it (status line aside: headers and body)
    /// built now and shared by every request it answers.
    ///
    /// For responses sent over and over, such as a webhook acknowledgement: sending it then
    /// costs no allocation or copy. Keep the result in a `static let`; building one per
    /// request gains nothing.
    /// ```swift
    /// respond(HTTPResponse(status: 200, body: Array("ok".utf8)))   // builds and frees per request
    /// static let ok = HTTPResponse(status: 200, body: Array("ok".utf8)).reusable()  // right
    /// ```
    public func reusable() -> HTTPResponse {
        var response = self
        response.prepared = PreparedResponse(response)
        return response
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
