import CCurl
import Foundation
import PayhookCore
import Synchronization

/// The dedicated thread that drives one libcurl multi handle for `CurlHTTPClient`.
///
/// Callers hand transfers over through a lock-protected inbox and `curl_multi_wakeup`; the
/// thread attaches them (reusing easy handles), runs `curl_multi_perform`/`curl_multi_poll`,
/// and answers each caller when `curl_multi_info_read` reports its transfer done. Idle
/// connections stay in the multi handle's cache, so calls to the same host reuse them.
///
/// Owns the multi handle and the idle easy handles (freed in `deinit`); attached easy handles
/// are detached and freed by the thread itself when it stops.
final class CurlMultiLoop: @unchecked Sendable {
    // Invariant: `active` and `idle`, and `multi` except for `curl_multi_wakeup`, are used only
    // on the loop thread while it runs, and in `deinit`, which runs after the thread has
    // returned from `run` (the thread holds a strong reference until then) or when it never
    // started. `curl_multi_wakeup` is the one call curl allows from any thread; it is made only
    // under the inbox lock and only while `stopping` is false, and the thread reads `stopping`
    // under that lock before it ends, so no wakeup can reach a freed handle.
    private let multi: UnsafeMutableRawPointer?
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var idle: [UnsafeMutableRawPointer] = []
    private let idleLimit: Int

    private struct Inbox {
        var added: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
        var stopping = false
        /// A wakeup is on its way since the thread last emptied the inbox.
        var woken = false
    }

    private let inbox = Mutex(Inbox())

    /// New TCP (or TLS) connections opened so far; reuse keeps it low.
    let connectionsOpened = Atomic<Int>(0)

    /// - Parameter maxConnections: idle connections kept for reuse, and easy handles kept for
    ///   reuse; at least the number of calls in flight, so a steady load opens none.
    init(maxConnections: Int) {
        let multi = CurlMultiLoop.globalInit ? curl_multi_init() : nil
        if let multi {
            _ = payhook_curl_multi_set_max_connects(multi, max(1, maxConnections))
        }
        self.multi = multi
        self.idleLimit = max(1, maxConnections)
        if multi == nil { inbox.withLock { $0.stopping = true } }
    }

    deinit {
        for easy in idle { curl_easy_cleanup(easy) }
        if let multi { curl_multi_cleanup(multi) }
    }

    /// `curl_global_init` once per process, before any other curl call (it is not safe to race
    /// with other curl calls on every libcurl build). Never undone: FoundationNetworking shares
    /// the library.
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Starts the thread. Call once.
    func start() {
        guard multi != nil else { return }
        let thread = Thread { self.run() }
        thread.name = "payhook.curl"
        thread.start()
    }

    /// Hands a transfer to the thread. Returns false once the loop is stopping (or never
    /// started); the transfer is then untouched.
    func submit(_ transfer: CurlTransfer) -> Bool {
        inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.added.append(transfer)
            wake(&inbox)
            return true
        }
    }

    /// Asks the thread to detach a transfer whose caller has already been answered.
    func cancel(_ transfer: CurlTransfer) {
        inbox.withLock { inbox in
            guard !inbox.stopping else { return }
            inbox.cancelled.append(transfer)
            wake(&inbox)
        }
    }

    /// Stops the thread: calls in flight end with `.cancelled`, calls not yet attached with
    /// `.connection`, later calls are refused. Returns at once; idempotent.
    func shutdown() {
        inbox.withLock { inbox in
            guard !inbox.stopping else { return }
            inbox.stopping = true
            if let multi { curl_multi_wakeup(multi) }
        }
    }

    private func wake(_ inbox: inout Inbox) {
        guard !inbox.woken, let multi else { return }
        inbox.woken = true
        curl_multi_wakeup(multi)
    }

    // MARK: Loop thread

    private func run() {
        guard let multi else { return }
        payhook_curl_block_sigpipe()
        var added: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
        var running: Int32 = 0
        while true {
            let stopping = inbox.withLock { inbox in
                swap(&added, &inbox.added)
                swap(&cancelled, &inbox.cancelled)
                inbox.woken = false
                return inbox.stopping
            }
            if stopping {
                stop(pending: added)
                return
            }
            for transfer in added { attach(transfer) }
            for transfer in cancelled { detach(transfer) }
            added.removeAll(keepingCapacity: true)
            cancelled.removeAll(keepingCapacity: true)

            _ = curl_multi_perform(multi, &running)
            collectFinished(multi)
            // curl shortens the wait to its own next timeout; a wakeup ends it early.
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }

    private func attach(_ transfer: CurlTransfer) {
        guard let multi else { return }
        let request = transfer.request
        if transfer.isFinished {
            // Cancelled before it got here.
            transfer.releaseSlot()
            return
        }
        let remaining = transfer.deadline - ContinuousClock.now
        guard remaining > .zero else {
            fail(transfer, CurlHTTPClient.timeoutError(request))
            return
        }
        guard let easy = idle.popLast() ?? curl_easy_init() else {
            fail(transfer, HTTPClientError(.connection, CurlHTTPClient.describe(request, "libcurl could not create a handle")))
            return
        }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = max(1, Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
        let method = request.method
        let sendsBody = !request.body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH"
        let code = request.url.absoluteString.withCString { url in
            method.withCString { method in
                request.body.withUnsafeBytes { body in
                    var options = payhook_curl_request(
                        url: url, method: method,
                        body: body.baseAddress?.assumingMemoryBound(to: CChar.self), body_length: body.count,
                        sends_body: sendsBody ? 1 : 0, headers: transfer.headerList, timeout_ms: milliseconds,
                        on_header: curlHeaderSink, on_body: curlBodySink,
                        context: Unmanaged.passUnretained(transfer).toOpaque(), resolve: transfer.resolveList)
                    return payhook_curl_prepare(easy, &options)
                }
            }
        }
        guard code == CURLE_OK else {
            recycle(easy)
            fail(transfer, HTTPClientError(.connection, CurlHTTPClient.describe(request, "libcurl refused the request (\(code.rawValue))")))
            return
        }
        guard curl_multi_add_handle(multi, easy) == CURLM_OK else {
            recycle(easy)
            fail(transfer, HTTPClientError(.connection, CurlHTTPClient.describe(request, "libcurl could not start the transfer")))
            return
        }
        transfer.easy = easy
        active[easy] = transfer
    }

    /// Removes a transfer whose caller was answered already (cancelled).
    private func detach(_ transfer: CurlTransfer) {
        guard let multi, let easy = transfer.easy, active[easy] === transfer else { return }
        _ = curl_multi_remove_handle(multi, easy)
        active[easy] = nil
        transfer.easy = nil
        recycle(easy)
        transfer.releaseSlot()
    }

    private func collectFinished(_ multi: UnsafeMutableRawPointer) {
        var result = CURLE_OK
        while let easy = payhook_curl_next_done(multi, &result) {
            _ = curl_multi_remove_handle(multi, easy)
            guard let transfer = active.removeValue(forKey: easy) else {
                recycle(easy)
                continue
            }
            connectionsOpened.add(payhook_curl_new_connections(easy), ordering: .relaxed)
            let outcome: CurlTransfer.Outcome
            if result == CURLE_OK {
                let status = payhook_curl_response_code(easy)
                outcome = status > 0
                    ? .success(transfer.takeResponse(status: status))
                    : .failure(HTTPClientError(.invalidResponse, CurlHTTPClient.describe(transfer.request, "no status line")))
            } else {
                outcome = .failure(CurlHTTPClient.error(
                    transfer.request, curlCode: result.rawValue, osErrno: payhook_curl_os_errno(easy)))
            }
            transfer.easy = nil
            recycle(easy)
            transfer.releaseSlot()
            transfer.finish(outcome)
        }
    }

    private func fail(_ transfer: CurlTransfer, _ error: HTTPClientError) {
        transfer.releaseSlot()
        transfer.finish(.failure(error))
    }

    private func recycle(_ easy: UnsafeMutableRawPointer) {
        if idle.count < idleLimit {
            idle.append(easy)
        } else {
            curl_easy_cleanup(easy)
        }
    }

    private func stop(pending: [CurlTransfer]) {
        for transfer in pending {
            fail(transfer, HTTPClientError(.connection, CurlHTTPClient.describe(transfer.request, "client shut down before the call was sent")))
        }
        guard let multi else { return }
        for (easy, transfer) in active {
            _ = curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            transfer.easy = nil
            fail(transfer, HTTPClientError(.cancelled, CurlHTTPClient.describe(transfer.request, "client shut down during the call")))
        }
        active.removeAll()
    }
}

/// CURLOPT_HEADERFUNCTION: one complete header line per call.
private func curlHeaderSink(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    deliverCurlBytes(data, size, count, context) { $0.receiveHeaderLine($1) }
}

/// CURLOPT_WRITEFUNCTION: a piece of the body.
private func curlBodySink(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    deliverCurlBytes(data, size, count, context) { $0.receiveBody($1) }
}

/// The two sinks' common part: find the transfer in curl's context pointer, hand it the bytes,
/// and report them all taken (anything else makes curl abort the transfer).
private func deliverCurlBytes(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?,
    to receive: (CurlTransfer, UnsafeRawBufferPointer) -> Void
) -> Int {
    let length = size * count
    guard let data, let context else { return length }
    receive(Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue(), UnsafeRawBufferPointer(start: data, count: length))
    return length
}
