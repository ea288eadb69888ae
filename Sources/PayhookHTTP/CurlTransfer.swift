import CCurl
import PayhookCore
import Synchronization

/// One call on its way through `CurlMultiLoop`: the request, the header list curl sends, the
/// response as it arrives, and the caller's continuation.
///
/// Owns its `curl_slist` (freed in `deinit`). The loop keeps the transfer alive while its easy
/// handle is attached to the multi handle, so the list and the callbacks' context outlive
/// curl's use of them.
final class CurlTransfer: @unchecked Sendable {
    // Invariant: `easy`, `responseHeaders` and `responseBody` are read and written only on the
    // loop thread (CurlMultiLoop.run and the curl callbacks it drives). Everything else is
    // immutable, or inside `completion` and `slotHeld`.
    typealias Outcome = Result<HTTPClientResponse, HTTPClientError>

    let request: HTTPClientRequest
    /// The end of the whole call, slot wait included.
    let deadline: ContinuousClock.Instant
    /// `nil` when every header line could be built (see `init`).
    let rejectedHeader: String?
    /// The request's header lines for CURLOPT_HTTPHEADER, which curl does not copy.
    let headerList: UnsafeMutablePointer<curl_slist>?
    /// `host:port:address` for CURLOPT_RESOLVE when the request names its `connectAddress`;
    /// curl does not copy it either.
    let resolveList: UnsafeMutablePointer<curl_slist>?

    /// The easy handle while attached to the multi handle. Loop thread only.
    var easy: UnsafeMutableRawPointer?
    /// Loop thread only.
    private(set) var responseHeaders: [(String, String)] = []
    /// Loop thread only.
    private(set) var responseBody: [UInt8] = []

    private let completion = FirstOutcome<Outcome>()
    private let slots: AsyncSemaphore
    private let slotHeld = Atomic<Bool>(true)

    /// Builds the header list on the caller's thread, so the loop thread only attaches it.
    /// - Parameter slots: the semaphore whose permit this call holds; `releaseSlot()` returns it.
    init(request: HTTPClientRequest, deadline: ContinuousClock.Instant, slots: AsyncSemaphore) {
        self.request = request
        self.deadline = deadline
        self.slots = slots
        var list: UnsafeMutablePointer<curl_slist>?
        var rejected: String?
        var sendsExpect = false
        for (name, value) in request.headers {
            // A line break would let a value start a header (or a request) of its own.
            if Self.breaksLine(name) || Self.breaksLine(value) {
                rejected = Self.breaksLine(name) ? "a header name" : "header \(name)"
                break
            }
            if name.utf8.count == 6, name.lowercased() == "expect" { sendsExpect = true }
            // curl drops "Name:" (no value) from the request; "Name;" sends it empty.
            list = curl_slist_append(list, value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        if !sendsExpect && !request.body.isEmpty {
            // curl would otherwise ask large POSTs for "100 Continue" and wait up to a second.
            list = curl_slist_append(list, "Expect:")
        }
        headerList = list
        rejectedHeader = rejected
        resolveList = Self.resolveEntry(request).map { curl_slist_append(nil, $0) } ?? nil
    }

    deinit {
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
    }

    /// The CURLOPT_RESOLVE entry pinning the URL's host and port to `connectAddress`; nil
    /// without one, for a host that is an address already, or for text that could break the
    /// entry's syntax.
    static func resolveEntry(_ request: HTTPClientRequest) -> String? {
        guard let address = request.connectAddress, let host = request.url.host, !host.isEmpty,
              !host.contains(":"), !host.hasPrefix("["),
              address.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }) else { return nil }
        let port = request.url.port ?? (request.url.scheme?.lowercased() == "https" ? 443 : 80)
        return "\(host):\(port):" + (address.contains(":") ? "[\(address)]" : address)
    }

    private static func breaksLine(_ text: String) -> Bool {
        text.utf8.contains { $0 == 10 || $0 == 13 || $0 == 0 }
    }

    // MARK: Completion (any thread)

    var isFinished: Bool { completion.isFinished }

    /// Parks the caller; if the call already ended (cancelled first), resumes it at once.
    func install(_ continuation: CheckedContinuation<Outcome, Never>) { completion.install(continuation) }

    /// Decides the call's outcome; only the first call counts.
    func finish(_ outcome: Outcome) { completion.finish(outcome) }

    /// Returns the concurrency permit; only the first call counts. Called when curl has let go
    /// of the transfer (or never had it), not when the caller is answered, so the bound on
    /// transfers inside curl stays honest after a cancellation.
    func releaseSlot() {
        if slotHeld.exchange(false, ordering: .acquiringAndReleasing) { slots.release() }
    }

    // MARK: Response (loop thread)

    /// Takes one header line as curl delivers it (status lines and the blank line included).
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 10 || line[end - 1] == 13 { end -= 1 }
        guard end > 0 else { return }
        if end >= 5, line[0] == 72, line[1] == 84, line[2] == 84, line[3] == 80, line[4] == 47 {
            // "HTTP/": a new response begins (after a 1xx, or on a retried connection).
            responseHeaders.removeAll(keepingCapacity: true)
            return
        }
        if line[0] == 32 || line[0] == 9 {
            // Obsolete line folding: the line continues the previous value.
            if let last = responseHeaders.popLast() {
                let more = Self.text(line, Self.trimmed(line, from: 0, to: end))
                responseHeaders.append((last.0, last.1 + " " + more))
            }
            return
        }
        guard let colon = line[..<end].firstIndex(of: 58) else { return }
        let name = Self.text(line, 0..<colon)
        let value = Self.text(line, Self.trimmed(line, from: colon + 1, to: end))
        responseHeaders.append((name, value))
    }

    /// Takes a piece of the body.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) {
        responseBody.append(contentsOf: bytes)
    }

    /// The collected response, moved out.
    func takeResponse(status: Int) -> HTTPClientResponse {
        defer { responseHeaders = []; responseBody = [] }
        return HTTPClientResponse(status: status, headers: responseHeaders, body: responseBody)
    }

    private static func trimmed(_ line: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Range<Int> {
        var start = start
        var end = end
        while start < end, line[start] == 32 || line[start] == 9 { start += 1 }
        while end > start, line[end - 1] == 32 || line[end - 1] == 9 { end -= 1 }
        return start..<end
    }

    private static func text(_ line: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: line[range]), as: UTF8.self)
    }
}
