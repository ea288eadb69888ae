import Dispatch
import Foundation
import PayhookCore
import Synchronization
@testable import PayhookHTTP

#if canImport(Glibc)
import Glibc
#endif

/// A value shared between a handler (on a server thread) and the test.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value { storage.withLock { $0 } }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// Starts a server on 127.0.0.1 with an ephemeral port.
func startServer(
    _ adjust: (inout HTTPServerConfiguration) -> Void = { _ in },
    handler: @escaping HTTPHandler
) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    adjust(&configuration)
    let server = try HTTPServer(configuration: configuration, handler: handler)
    try server.start()
    return server
}

/// Runs blocking work (raw sockets) on a thread of its own: not on the cooperative pool, which
/// has only two threads here, and not on Dispatch's global queue, where 200 blocked clients
/// would delay the handlers' own `respond` work.
func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}

struct RawResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// A blocking TCP client that writes exactly the bytes it is given, for requests URLSession
/// would never send (stalled, truncated, oversized, raw query bytes).
final class RawConnection: @unchecked Sendable {
    // Invariant: each instance is used by one thread at a time (the test's offPool closure).
    private let fd: Int32
    private var buffered: [UInt8] = []

    init?(port: Int, receiveTimeoutSeconds: Int = 10) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // No close here: a class's failable init that fails after every property is set
        // still runs deinit, which closes `fd`; closing it here too would close whatever
        // descriptor another thread opened under the same number in between.
        if connected != 0 { return nil }
    }

    deinit { close(fd) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads one response; nil if the connection closed or timed out first.
    func readResponse() -> RawResponse? {
        guard let headerEnd = fill(until: { $0.firstRange(of: [13, 10, 13, 10]).map(\.upperBound) }) else { return nil }
        let head = String(decoding: buffered[..<headerEnd], as: UTF8.self)
        buffered.removeFirst(headerEnd)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        guard fill(until: { $0.count >= length ? length : nil }) != nil else { return nil }
        let body = Array(buffered.prefix(length))
        buffered.removeFirst(length)
        return RawResponse(status: status, headers: headers, body: body)
    }

    enum Ending: Equatable { case closedByPeer, timedOut }

    /// Reads and discards until the peer closes (or the receive timeout passes).
    func readUntilClosed() -> Ending {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count == 0 { return .closedByPeer }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .timedOut : .closedByPeer
        }
    }

    private func fill(until complete: ([UInt8]) -> Int?) -> Int? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let done = complete(buffered) { return done }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            buffered.append(contentsOf: chunk[..<count])
        }
    }
}

/// One raw request/response exchange on a fresh connection.
func rawExchange(port: Int, _ request: String) async -> RawResponse? {
    await offPool {
        guard let connection = RawConnection(port: port) else { return nil }
        connection.send(request)
        return connection.readResponse()
    }
}

/// A bare TCP listener on 127.0.0.1, for peers HTTPServer cannot play: one that never answers
/// (connections wait in the backlog, never accepted) or one that answers bytes that are not HTTP.
final class RawListener: @unchecked Sendable {
    // Invariant: `fd` is fixed at init; the accept thread only reads it, and `close()` stops
    // that thread with shutdown(2) before the descriptor is released in deinit.
    private let fd: Int32
    let port: Int

    init?() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        // As in RawConnection: deinit closes `fd` when this init fails.
        if fd < 0 || bound != 0 || named != 0 || listen(fd, 64) != 0 { return nil }
    }

    deinit { Glibc.close(fd) }

    /// Accepts connections on a thread of its own; each gets `reply` once its request head has
    /// arrived, and is then closed.
    func answerEach(with reply: [UInt8]) {
        let fd = self.fd
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                var chunk = [UInt8](repeating: 0, count: 4096)
                var head: [UInt8] = []
                while head.firstRange(of: [13, 10, 13, 10]) == nil {
                    let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    head.append(contentsOf: chunk[..<count])
                }
                _ = reply.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Glibc.close(client)
            }
        }
    }

    /// Stops accepting (wakes a blocked accept).
    func close() { shutdown(fd, Int32(SHUT_RDWR)) }
}

/// Sends a GET with a 30 s deadline and returns how it failed, or nil when it succeeded: for
/// tests that end a call from outside (cancellation, shutdown).
func failureKind(of client: any HTTPClient, url: URL) async -> HTTPClientError.Kind? {
    do throws(HTTPClientError) {
        _ = try await client.send(HTTPClientRequest(url: url, timeout: .seconds(30)))
        return nil
    } catch {
        return error.kind
    }
}
