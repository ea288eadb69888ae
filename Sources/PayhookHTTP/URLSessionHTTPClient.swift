public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
public import PayhookCore
public import Synchronization

/// `HTTPClient` on URLSession (libcurl underneath on Linux).
///
/// Two guards against URLSession misbehaving under load, where a call was seen to hang for
/// minutes despite its own timeout: at most `maxConcurrent` requests are handed to URLSession
/// at once (others wait, without blocking a thread, in FIFO order), and each call's deadline is
/// enforced here by racing the request against a clock. When the deadline wins, the caller gets
/// `.timeout` immediately and the URLSession task is cancelled; its slot is freed when URLSession
/// actually lets go of it, so the bound stays honest.
///
/// Safe to share; one instance per process (or per upstream) is the intent.
public final class URLSessionHTTPClient: HTTPClient {
    private let session: URLSession
    private let slots: AsyncSemaphore

    /// - Parameters:
    ///   - maxConcurrent: requests in flight inside URLSession at once (at least 1).
    ///   - configuration: session settings; by default ephemeral (no cookies, no cache). Its
    ///     `httpMaximumConnectionsPerHost` is set to `maxConcurrent`.
    public init(maxConcurrent: Int = 64, configuration: URLSessionConfiguration = .ephemeral) {
        let bound = max(1, maxConcurrent)
        configuration.httpMaximumConnectionsPerHost = bound
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // Ephemeral sessions still consult an in-memory cache and cookie jar on every request
        // (a measurable share of a charge's CPU in bench/charges); API calls need neither.
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        self.session = URLSession(configuration: configuration)
        self.slots = AsyncSemaphore(permits: bound)
    }

    deinit {
        session.invalidateAndCancel()
    }

    public func send(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        let deadline = ContinuousClock.now + request.timeout
        let race = CallRace()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.install(continuation)
                let session = self.session
                let slots = self.slots
                race.adopt(Task {
                    guard await slots.acquire() else {
                        race.finish(.failure(HTTPClientError(.cancelled, Self.describe(request, "cancelled while waiting for a slot"))))
                        return
                    }
                    defer { slots.release() }
                    if race.isFinished { return }
                    race.finish(await Self.perform(request, on: session))
                })
                race.adopt(Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if Task.isCancelled { return }
                    race.finish(.failure(HTTPClientError(
                        .timeout, Self.describe(request, "no response within \(request.timeout)"))))
                })
            }
        } onCancel: {
            race.finish(.failure(HTTPClientError(.cancelled, Self.describe(request, "calling task cancelled"))))
        }
        return try outcome.get()
    }

    private static func perform(
        _ request: HTTPClientRequest, on session: URLSession
    ) async -> Result<HTTPClientResponse, HTTPClientError> {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers {
            urlRequest.addValue(value, forHTTPHeaderField: name)
        }
        if !request.body.isEmpty {
            urlRequest.httpBody = Data(request.body)
        }
        // URLSession's own timer is only a backstop; the race in `send` is the real deadline.
        let (seconds, attoseconds) = request.timeout.components
        urlRequest.timeoutInterval = Double(seconds) + Double(attoseconds) / 1e18 + 1

        let running = Mutex<URLSessionDataTask?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>) in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    continuation.resume(returning: Self.outcome(request, data, response, error))
                }
                running.withLock { $0 = task }
                task.resume()
                // A cancellation that arrived before the task was stored is caught here.
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            running.withLock { $0?.cancel() }
        }
    }

    private static func outcome(
        _ request: HTTPClientRequest, _ data: Data?, _ response: URLResponse?, _ error: (any Error)?
    ) -> Result<HTTPClientResponse, HTTPClientError> {
        if let error {
            let code = (error as? URLError)?.code
            let kind: HTTPClientError.Kind
            switch code {
            case .timedOut?: kind = .timeout
            case .cancelled?: kind = .cancelled
            case .badServerResponse?, .cannotParseResponse?, .cannotDecodeRawData?: kind = .invalidResponse
            default: kind = .connection
            }
            return .failure(HTTPClientError(kind, describe(request, "URLError \(code?.rawValue ?? 0)")))
        }
        guard let http = response as? HTTPURLResponse else {
            return .failure(HTTPClientError(.invalidResponse, describe(request, "not an HTTP response")))
        }
        let headers = http.allHeaderFields.map { ("\($0.key)", "\($0.value)") }
        return .success(HTTPClientResponse(status: http.statusCode, headers: headers, body: data.map { [UInt8]($0) } ?? []))
    }

    /// Method, host and path only: queries and bodies may carry credentials.
    private static func describe(_ request: HTTPClientRequest, _ what: String) -> String {
        "\(request.method) \(request.url.host ?? "?")\(request.url.path): \(what)"
    }
}

/// One call's outcome, decided once by whichever finishes first: the request, the deadline
/// or the caller's cancellation. The losers' results are dropped and their tasks cancelled.
private final class CallRace: Sendable {
    typealias Outcome = Result<HTTPClientResponse, HTTPClientError>

    private let outcome = FirstOutcome<Outcome>()
    private let tasks = Mutex<[Task<Void, Never>]>([])

    var isFinished: Bool { outcome.isFinished }

    func install(_ continuation: CheckedContinuation<Outcome, Never>) { outcome.install(continuation) }

    /// Keeps a competing task so the winner can cancel it; cancels it at once when the race is
    /// over. (Checked after appending, so a task adopted while `finish` runs is cancelled by
    /// one side or the other.)
    func adopt(_ task: Task<Void, Never>) {
        tasks.withLock { $0.append(task) }
        if outcome.isFinished { task.cancel() }
    }

    func finish(_ result: Outcome) {
        guard outcome.finish(result) else { return }
        for task in tasks.withLock({ tasks in defer { tasks = [] }; return tasks }) { task.cancel() }
    }
}
