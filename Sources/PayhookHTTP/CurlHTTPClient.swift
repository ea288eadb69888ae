import CCurl
import Foundation
public import PayhookCore

/// `HTTPClient` on libcurl's multi interface, driven by one dedicated thread.
///
/// The only `HTTPClient` payhook has: it replaced a URLSession client that cost more per call
/// and once hung past its own timeout (docs/decisions/0005-libcurl-http-client.md). A call takes a slot, hands its request to the loop thread
/// and parks until curl reports the transfer done. Easy handles are reused and idle connections
/// stay in curl's cache, so calls to the same host reuse TCP (and TLS) connections.
///
/// - At most `maxConcurrent` transfers are inside curl at once; others wait, without blocking a
///   thread, in FIFO order. A slot is freed when curl lets go of the transfer.
/// - `request.timeout` covers the whole call, slot wait included; curl enforces the rest
///   (`CURLOPT_TIMEOUT_MS`).
/// - Cancelling the calling task answers it with `.cancelled` at once and detaches the transfer.
/// - Redirects are not followed (a 3xx is a response), HTTPS peers are verified, there is no
///   cookie engine and no cache. Only `http` and `https` URLs are sent.
///
/// Safe to share; one instance per process (or per upstream) is the intent. `shutdown()` (or
/// the last reference going away) stops the thread; calls in flight then end with `.cancelled`
/// and later calls with `.connection`.
///
/// ```swift
/// let http = CurlHTTPClient(maxConcurrent: 160)
/// let response = try await http.send(HTTPClientRequest(method: "POST", url: url, body: body))
/// ```
public final class CurlHTTPClient: HTTPClient, Service {
    private let loop: CurlMultiLoop
    private let slots: AsyncSemaphore
    /// How logs name this client (its `Service` name in `payhook serve`).
    public let serviceName: String
    /// Fired by `shutdown()`; what `run()` (the `Service` face) waits for.
    private let shutDown = StopSignal()

    /// Starts the loop thread.
    /// - Parameters:
    ///   - maxConcurrent: transfers inside curl at once (at least 1); also the number of idle
    ///     connections kept for reuse.
    ///   - name: how logs name the client as a part of `payhook serve`.
    public init(maxConcurrent: Int = 64, name: String = "HTTP client") {
        serviceName = name
        let bound = max(1, maxConcurrent)
        slots = AsyncSemaphore(permits: bound)
        loop = CurlMultiLoop(maxConnections: bound)
        loop.start()
    }

    deinit {
        loop.shutdown()
    }

    /// Stops the loop thread and closes its connections. Calls in flight end with `.cancelled`,
    /// calls still waiting to be sent and later calls with `.connection`. Returns without
    /// waiting for the thread; idempotent.
    public func shutdown() {
        loop.shutdown()
        shutDown.fire()
    }

    /// Waits until `shutdown()`: the loop thread does the work. A part of `payhook serve`, shut
    /// down after the processor and the job worker that call it have returned.
    public func run() async {
        await shutDown.wait()
    }

    /// `shutdown()`.
    public func stop() {
        shutdown()
    }

    /// New connections opened so far (for tests of connection reuse).
    var connectionsOpened: Int { loop.connectionsOpened.load(ordering: .relaxed) }

    public func send(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        let deadline = ContinuousClock.now + request.timeout
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw HTTPClientError(.connection, Self.describe(request, "only http and https URLs are supported; not sent"))
        }
        switch await slots.acquire(until: deadline) {
        case .acquired: break
        case .cancelled: throw HTTPClientError(.cancelled, Self.describe(request, "cancelled while waiting for a slot"))
        case .timedOut: throw Self.timeoutError(request)
        }
        let transfer = CurlTransfer(request: request, deadline: deadline, slots: slots)
        if let rejected = transfer.rejectedHeader {
            transfer.releaseSlot()
            throw HTTPClientError(.connection, Self.describe(request, "\(rejected) contains a line break; not sent"))
        }
        let loop = self.loop
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.install(continuation)
                if !loop.submit(transfer) {
                    transfer.releaseSlot()
                    transfer.finish(.failure(HTTPClientError(.connection, Self.describe(request, "client is shut down; not sent"))))
                }
            }
        } onCancel: {
            transfer.finish(.failure(HTTPClientError(.cancelled, Self.describe(request, "calling task cancelled"))))
            loop.cancel(transfer)
        }
        return try outcome.get()
    }

    // MARK: Errors

    /// The error kind for a failed curl transfer: the kinds the URLSession client this replaced
    /// reported for the same curl codes, except that curl's "not HTTP" answers are
    /// `.invalidResponse` (URLSession lumped them in with `.connection`).
    /// - Parameters:
    ///   - curlCode: the transfer's `CURLcode`.
    ///   - osErrno: `CURLINFO_OS_ERRNO`, which tells a connect timeout from a refusal.
    static func errorKind(curlCode: UInt32, osErrno: Int) -> HTTPClientError.Kind {
        switch curlCode {
        case 28: .timeout                                          // OPERATION_TIMEDOUT
        case 7 where osErrno == Int(ETIMEDOUT): .timeout           // COULDNT_CONNECT, connect timed out
        case 52, 8: .invalidResponse                               // GOT_NOTHING, WEIRD_SERVER_REPLY
        // UNSUPPORTED_PROTOCOL: the scheme is checked before sending, so this is curl refusing
        // an HTTP/0.9 answer, i.e. bytes that are not an HTTP response.
        case 1: .invalidResponse
        case 42: .cancelled                                        // ABORTED_BY_CALLBACK
        default: .connection
        }
    }

    static func error(_ request: HTTPClientRequest, curlCode: UInt32, osErrno: Int) -> HTTPClientError {
        let kind = errorKind(curlCode: curlCode, osErrno: osErrno)
        if kind == .timeout { return timeoutError(request) }
        // curl's own error buffer names hosts and sometimes more; the code is enough to act on.
        let reason = curl_easy_strerror(CURLcode(rawValue: curlCode)).map { String(cString: $0) } ?? "?"
        return HTTPClientError(kind, describe(request, "curl error \(curlCode) (\(reason))"))
    }

    static func timeoutError(_ request: HTTPClientRequest) -> HTTPClientError {
        HTTPClientError(.timeout, describe(request, "no response within \(request.timeout)"))
    }

    /// Method, host and path only: queries and bodies may carry credentials.
    static func describe(_ request: HTTPClientRequest, _ what: String) -> String {
        "\(request.method) \(request.url.host ?? "?")\(request.url.path): \(what)"
    }
}
