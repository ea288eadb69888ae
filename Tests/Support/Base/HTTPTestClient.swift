import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A response as read off the wire.
public struct HTTPTestResponse: Sendable, CustomStringConvertible {
    public let status: Int
    /// Header names lowercased; a repeated header keeps its last value.
    public let headers: [String: String]
    public let body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }
    public var isSuccess: Bool { (200..<300).contains(status) }
    public var description: String { "\(status) \(text.prefix(200))" }

    /// A header's value by name, case-insensitively.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A blocking HTTP/1.1 client over a raw TCP socket: one request per connection
/// (`Connection: close`), exact bytes on the wire, no retries, no redirects, no connection
/// reuse. Unlike URLSession it never retries or rewrites anything, which matters when a test
/// must know exactly which request the server answered.
///
/// The `async` entry points run each exchange on a thread of its own, off the cooperative pool.
public enum HTTPTestClient {
    /// Sends one request to 127.0.0.1:`port`; `nil` when no complete response arrived
    /// (connection refused or reset, or no answer within `timeoutSeconds`).
    public static func send(
        port: Int, method: String = "POST", path: String, headers: [(String, String)] = [],
        body: [UInt8] = [], timeoutSeconds: Int = 20, source: String? = nil
    ) async -> HTTPTestResponse? {
        await offPool {
            sendBlocking(port: port, method: method, path: path, headers: headers, body: body,
                         timeoutSeconds: timeoutSeconds, source: source)
        }
    }

    /// As `send`, blocking the calling thread.
    public static func sendBlocking(
        port: Int, method: String = "POST", path: String, headers: [(String, String)] = [],
        body: [UInt8] = [], timeoutSeconds: Int = 20, source: String? = nil
    ) -> HTTPTestResponse? {
        guard let connection = RawTestConnection(port: port, timeoutSeconds: timeoutSeconds, source: source) else { return nil }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method != "GET" || !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        guard connection.send(Array(head.utf8) + body) else {
            // The server may have answered early (e.g. 413) and closed; read what it said.
            return connection.readResponse()
        }
        return connection.readResponse()
    }

    /// Runs blocking work on a new thread and awaits its result.
    public static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
    }
}

/// One TCP connection to 127.0.0.1, for requests a normal client would never send
/// (stalled mid-headers, announced but unsent bodies). Use from one thread at a time.
public final class RawTestConnection: @unchecked Sendable {
    // @unchecked: the descriptor is only used by one thread at a time (documented above).
    private let fd: Int32
    /// Received bytes past the last response read.
    private var leftover: [UInt8] = []

    /// - Parameter source: a loopback address to connect from (e.g. `"127.0.0.2"`), so one test
    ///   can be two clients; `nil` lets the kernel choose (127.0.0.1).
    public init?(port: Int, timeoutSeconds: Int = 20, source: String? = nil) {
        // CLOEXEC: child processes spawned by other tests must not inherit client sockets.
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound != 0 { return nil }
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // No close here: a class's failable init that fails after every property is set
        // still runs deinit, which closes `fd`; closing it here too would close whatever
        // descriptor another thread opened under the same number in between.
        if connected != 0 { return nil }
    }

    deinit { close(fd) }

    /// Writes every byte; false if the connection failed first.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Half-closes: the server sees the end of the request stream, the answer can still arrive.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    public enum Ending: Equatable, Sendable { case closedByPeer, timedOut }

    /// Reads and discards until the peer closes (or resets) or the receive timeout passes.
    public func readUntilClosed() -> Ending {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count < 0 && errno == EINTR { continue }
            return count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ? .closedByPeer : .timedOut
        }
    }

    /// Reads and discards until the peer closes (`true`) or the receive timeout passes (`false`).
    public func awaitClose() -> Bool { readUntilClosed() == .closedByPeer }

    /// Reads until the peer closes (the requests carry `Connection: close`) or the body named
    /// by `Content-Length` is complete; `nil` without a complete status line and header block.
    /// Bytes after a response stay for the next call, so one connection can read several
    /// (keep-alive, pipelining).
    public func readResponse() -> HTTPTestResponse? {
        var buffer = leftover
        leftover = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        var headerEnd: Int?
        var expectedLength: Int?
        var parsed: (status: Int, headers: [String: String])?
        while true {
            if headerEnd == nil, let range = buffer.firstRange(of: [13, 10, 13, 10]) {
                headerEnd = range.upperBound
                parsed = Self.parseHead(Array(buffer[..<range.lowerBound]))
                guard parsed != nil else { return nil }
                expectedLength = parsed!.headers["content-length"].flatMap { Int($0) }
            }
            if let headerEnd, let expectedLength, buffer.count - headerEnd >= expectedLength { break }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                // Closed (or reset, or timed out): complete only if the head arrived and no
                // announced body bytes are missing.
                guard headerEnd != nil, expectedLength == nil, count == 0 else { return nil }
                break
            }
            buffer.append(contentsOf: chunk[..<count])
        }
        guard let headerEnd, let parsed else { return nil }
        let end = expectedLength.map { headerEnd + $0 } ?? buffer.count
        let body = Array(buffer[headerEnd..<end])
        leftover = Array(buffer[end...])
        return HTTPTestResponse(status: parsed.status, headers: parsed.headers, body: body)
    }

    private static func parseHead(_ bytes: [UInt8]) -> (status: Int, headers: [String: String])? {
        var lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/"), let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }
}
