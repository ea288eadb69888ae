public import Foundation

// The outbound HTTP contract lives in Core, not beside its libcurl implementation in
// PayhookHTTP: provider parsing, verification and API request building depend on the protocol
// only, so they link neither libcurl nor libmicrohttpd. `CurlHTTPClient` is injected where
// `serve` is composed.

/// One outbound HTTP call (provider API, merchant callback).
public struct HTTPClientRequest: Sendable {
    public var method: String
    public var url: URL
    /// Header pairs, sent in this order.
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Deadline for the whole call, including time spent waiting for a free slot.
    public var timeout: Duration
    /// The numeric address to connect to instead of resolving the URL's host again, e.g. one a
    /// caller resolved and checked itself (so a name that now resolves elsewhere cannot
    /// redirect the call). TLS still verifies the certificate against the URL's host.
    public var connectAddress: String?

    public init(
        method: String = "GET", url: URL, headers: [(String, String)] = [], body: [UInt8] = [],
        timeout: Duration = .seconds(10), connectAddress: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectAddress = connectAddress
    }
}

/// A complete response to an `HTTPClientRequest`. Any status counts as a response.
public struct HTTPClientResponse: Sendable {
    public var status: Int
    /// Header pairs as the transport reports them (order and case are not guaranteed).
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why an outbound call produced no response.
///
/// The message names the method and the URL's host and path, never its query (which may
/// carry tokens) or the bodies.
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The deadline passed before a response arrived.
        case timeout
        /// Could not connect, or the connection failed mid-call.
        case connection
        /// The peer answered something that is not HTTP.
        case invalidResponse
        /// The calling task was cancelled.
        case cancelled
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "HTTPClientError.\(kind): \(message)" }
}

/// Sends HTTP requests. One job: request in, response or typed error out.
///
/// Implementations are safe to call concurrently and honour `request.timeout` and task
/// cancellation. Tests substitute a fake.
public protocol HTTPClient: Sendable {
    /// Sends the request and returns the response, whatever its status.
    /// - Throws: `HTTPClientError` for a timeout, a connection failure, a non-HTTP answer,
    ///   or cancellation of the calling task.
    func send(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse
}
