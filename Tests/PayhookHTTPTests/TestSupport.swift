import Dispatch
import Foundation
import PayhookCore
import PayhookTestSupport
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

/// One raw request/response exchange on a fresh connection.
func rawExchange(port: Int, _ request: String) async -> HTTPTestResponse? {
    await HTTPTestClient.offPool {
        guard let connection = RawTestConnection(port: port, timeoutSeconds: 10) else { return nil }
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
        // As in RawTestConnection: deinit closes `fd` when this init fails.
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
