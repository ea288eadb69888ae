import PayhookCore
import CMicroHTTPD
import Synchronization

/// The server's state for one request, from its request line to its completion callback.
///
/// libmicrohttpd carries it in the request's `con_cls` slot as a retained `Unmanaged`
/// reference: created by the URI-log callback (the first callback of every request, and the
/// only one that sees the raw URI), released by the request-completed callback.
///
/// `@unchecked Sendable` invariant: the variable stored properties below (`phase`, `method`,
/// `path`, `headers`, `body`, `bodyBytesSeen`, `bodyTooLarge`, `reservedBodyBytes`) are touched only from
/// libmicrohttpd callbacks for this request, and libmicrohttpd runs every callback of a
/// connection on that connection's one polling thread. Whatever other threads touch (the
/// handler's `respond`, the timeout sweep, `stop()`) lives in `reply`, behind a `Mutex`.
final class HTTPExchange: @unchecked Sendable {
    enum Phase {
        case awaitingHeaders
        case receivingBody
        /// The handler has the request; a response is queued once it arrives.
        case dispatched
        /// A response is queued; later upload data is discarded.
        case answered
    }

    /// The part of the exchange shared with other threads.
    enum Reply {
        case notDispatched
        /// The handler is running on the polling thread; `respond` stores the response.
        case handlerRunning
        /// The connection is suspended and listed in `DaemonContext.parked`.
        case parked
        /// A response waits for the polling thread to queue it.
        case ready(HTTPResponse)
        /// A response was queued or the request ended; any later response is dropped.
        case finished
    }

    let context: DaemonContext
    let rawQuery: String
    let remoteAddress: String
    let reply = Mutex<Reply>(.notDispatched)

    private var phase = Phase.awaitingHeaders
    private var method = ""
    private var path = ""
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    private var bodyBytesSeen = 0
    private var bodyTooLarge = false
    /// Body budget taken from `context` (`DaemonContext.reserveBody`), given back in `finish()`.
    /// Read there from the completion callback, on this connection's polling thread too.
    private var reservedBodyBytes = 0

    init(context: DaemonContext, rawQuery: String, remoteAddress: String) {
        self.context = context
        self.rawQuery = rawQuery
        self.remoteAddress = remoteAddress
    }

    /// One access-handler call. Returns false to make libmicrohttpd close the connection.
    func advance(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method methodText: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>
    ) -> Bool {
        switch phase {
        case .awaitingHeaders:
            method = methodText.map { String(cString: $0) } ?? ""
            path = url.map { String(cString: $0) } ?? ""
            headers = Self.readHeaders(connection)
            phase = .receivingBody
            // Refuse before reading: a declared oversize body is never buffered.
            if let declared = headers.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }) {
                if declared > context.maxBodyBytes {
                    phase = .answered
                    context.deadlines?.requestArrived(connection)
                    return Self.queue(HTTPResponse.text(413, "request body too large\n"), on: connection)
                }
                // A body that cannot fit in what is left of the budget now is refused unread.
                guard context.bodyBudgetHasRoom(for: declared) else {
                    phase = .answered
                    context.deadlines?.requestArrived(connection)
                    return Self.queue(Self.overBodyBudget, on: connection)
                }
                // The body arrives in one or more pieces; one allocation holds them all (address
                // space only: pages are resident, and budget taken, as bytes arrive).
                body.reserveCapacity(declared)
            }
            return true

        case .receivingBody:
            let count = uploadDataSize.pointee
            if count > 0 {
                uploadDataSize.pointee = 0
                bodyBytesSeen += count
                if bodyTooLarge || body.count + count > context.maxBodyBytes {
                    // Chunked upload past the limit: drop what we have and discard the rest,
                    // so the 413 can be sent once the request ends; stop reading at twice the limit.
                    bodyTooLarge = true
                    body = []
                    return bodyBytesSeen <= context.maxBodyBytes * 2
                }
                if body.count + count > reservedBodyBytes {
                    // Budget is taken as bytes arrive, so announcing a large body and sending
                    // nothing holds none; past the budget the connection is closed.
                    let more = body.count + count - reservedBodyBytes
                    guard context.reserveBody(more) else {
                        bodyTooLarge = true
                        body = []
                        return false
                    }
                    reservedBodyBytes += more
                }
                if let uploadData {
                    body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: count))
                }
                return true
            }
            if bodyTooLarge {
                phase = .answered
                context.deadlines?.requestArrived(connection)
                return Self.queue(HTTPResponse.text(413, "request body too large\n"), on: connection)
            }
            return dispatch(connection)

        case .dispatched:
            // Called again after `MHD_resume_connection`: the stored response is ready.
            let response: HTTPResponse? = reply.withLock { reply in
                guard case .ready(let response) = reply else { return nil }
                reply = .finished
                return response
            }
            guard let response else { return false }
            phase = .answered
            return Self.queue(response, on: connection)

        case .answered:
            uploadDataSize.pointee = 0
            return true
        }
    }

    /// Called by the request-completed callback; late responses are dropped from here on.
    func finish() {
        reply.withLock { $0 = .finished }
        context.releaseBody(reservedBodyBytes)
        reservedBodyBytes = 0
    }

    static let overBodyBudget = HTTPResponse(
        status: 503, headers: [("Retry-After", "1"), ("Content-Type", "text/plain"), ("Connection", "close")],
        body: Array("server busy receiving other requests, retry\n".utf8))

    private func dispatch(_ connection: OpaquePointer) -> Bool {
        phase = .dispatched
        // Complete: the handler's own timeout applies from here, not the request deadline.
        context.deadlines?.requestArrived(connection)
        reply.withLock { $0 = .handlerRunning }
        let request = HTTPRequest(
            method: method, path: path, rawQuery: rawQuery,
            lowercasedHeaders: headers, body: body, remoteAddress: remoteAddress)
        // The request owns these now; drop our references so nothing is copied on write.
        headers = []
        body = []
        context.handler(request) { [self] response in
            context.deliver(response, to: self)
        }
        // Either the handler already responded (queue now) or the connection is parked.
        guard let response = context.parkUnlessAnswered(self, connection: connection) else { return true }
        phase = .answered
        return Self.queue(response, on: connection)
    }

    private static func readHeaders(_ connection: OpaquePointer) -> [(name: String, value: String)] {
        var collected: [(name: String, value: String)] = []
        // Webhook requests carry a handful of headers: one allocation instead of regrowing.
        collected.reserveCapacity(12)
        withUnsafeMutablePointer(to: &collected) { pointer in
            payhook_mhd_visit_headers(connection, { context, name, nameLength, value, valueLength in
                guard let context, let name, let value else { return }
                let headers = context.assumingMemoryBound(to: [(name: String, value: String)].self)
                let nameBytes = UnsafeRawBufferPointer(start: name, count: nameLength)
                let valueBytes = UnsafeRawBufferPointer(start: value, count: valueLength)
                // Lowercased through a stack buffer: names of up to 15 bytes become Strings
                // stored inline, with no allocation at all.
                let lowercasedName = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(nameLength, 1)) { buffer in
                    for (index, byte) in nameBytes.enumerated() {
                        buffer[index] = byte >= 65 && byte <= 90 ? byte + 32 : byte
                    }
                    return String(decoding: UnsafeBufferPointer(rebasing: buffer[..<nameLength]), as: UTF8.self)
                }
                headers.pointee.append((name: lowercasedName, value: String(decoding: valueBytes, as: UTF8.self)))
            }, pointer)
        }
        return collected
    }

    /// Queues `response` on the connection; false if libmicrohttpd refused it.
    static func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> Bool {
        let status = UInt32((200...599).contains(response.status) ? response.status : 500)
        if let prepared = response.prepared?.pointer {
            return payhook_mhd_queue(connection, status, prepared) != 0
        }
        guard let built = build(response) else { return false }
        return payhook_mhd_queue_and_release(connection, status, built) != 0
    }

    /// A libmicrohttpd response with `response`'s headers and a copy of its body; the caller
    /// owns it. `nil` if libmicrohttpd cannot allocate one.
    static func build(_ response: HTTPResponse) -> OpaquePointer? {
        let built = response.body.withUnsafeBytes { bytes in
            payhook_mhd_response_copying(bytes.baseAddress, bytes.count)
        }
        guard let built else { return nil }
        for header in response.headers {
            // libmicrohttpd frames the body itself; a second length header would corrupt it.
            if isFramingHeader(header.name) { continue }
            _ = payhook_mhd_add_header(built, header.name, header.value)
        }
        return built
    }

    /// `content-length` or `transfer-encoding`, in any case, compared without allocating.
    static func isFramingHeader(_ name: String) -> Bool {
        func matches(_ lowercased: StaticString) -> Bool {
            guard name.utf8.count == lowercased.utf8CodeUnitCount else { return false }
            var offset = 0
            for byte in name.utf8 {
                let lower = byte >= 65 && byte <= 90 ? byte + 32 : byte
                guard lower == lowercased.utf8Start[offset] else { return false }
                offset += 1
            }
            return true
        }
        return matches("content-length") || matches("transfer-encoding")
    }
}
