import Dispatch
import Foundation
import PayhookCore
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookHTTP

/// What only CurlHTTPClient promises (methods, redirects, connection reuse, slots, shutdown,
/// TLS checks) and peers HTTPServer cannot play; the shared contract is in
/// `HTTPClientContractTests`.
@Suite("CurlHTTPClient", .serialized)
struct CurlHTTPClientTests {
    @Test("GET, PUT and DELETE go out with their method; a body goes only where one is given")
    func methods() async throws {
        let seen = Shared<[String]>([])
        let server = try startServer { request, respond in
            seen.update { $0.append("\(request.method) \(request.body.count)") }
            respond(.text(200, "ok"))
        }
        defer { server.stop() }

        let client = CurlHTTPClient(maxConcurrent: 1)
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/r"))
        for (method, body) in [("GET", ""), ("PUT", "abc"), ("DELETE", ""), ("POST", "")] {
            let response = try await client.send(HTTPClientRequest(method: method, url: url, body: Array(body.utf8)))
            #expect(response.status == 200)
            #expect(response.body == Array("ok".utf8))
        }
        #expect(seen.value == ["GET 0", "PUT 3", "DELETE 0", "POST 0"])
    }

    @Test("a redirect is returned as the response, not followed")
    func redirectNotFollowed() async throws {
        let paths = Shared<[String]>([])
        let server = try startServer { request, respond in
            paths.update { $0.append(request.path) }
            respond(HTTPResponse(status: 302, headers: [("Location", "/elsewhere")]))
        }
        defer { server.stop() }

        let client = CurlHTTPClient()
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/start"))
        let response = try await client.send(HTTPClientRequest(url: url))
        #expect(response.status == 302)
        #expect(response.headers.contains { $0.0.lowercased() == "location" && $0.1 == "/elsewhere" })
        #expect(paths.value == ["/start"])
    }

    @Test("a peer that accepts the connection but never reads or answers yields .timeout")
    func silentPeerTimesOut() async throws {
        let listener = try #require(RawListener())
        defer { listener.close() }

        let client = CurlHTTPClient()
        let url = try #require(URL(string: "http://127.0.0.1:\(listener.port)/charge?token=t0k3n"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(
                method: "POST", url: url, body: Array("{\"card\":\"secret-body\"}".utf8), timeout: .milliseconds(400)))
        }
        #expect(error?.kind == .timeout)
        #expect(error?.message.contains("t0k3n") == false)
        #expect(error?.message.contains("secret-body") == false)
    }

    @Test("an answer that is not HTTP is reported as .invalidResponse")
    func notHTTP() async throws {
        let listener = try #require(RawListener())
        defer { listener.close() }
        listener.answerEach(with: Array("SSH-2.0-OpenSSH_9.2\r\n\r\n".utf8))

        let client = CurlHTTPClient()
        let url = try #require(URL(string: "http://127.0.0.1:\(listener.port)/"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url, timeout: .seconds(5)))
        }
        #expect(error?.kind == .invalidResponse)
    }

    @Test("time spent waiting for a slot counts toward the deadline")
    func slotWaitCountsTowardDeadline() async throws {
        let server = try startServer({ $0.handlerTimeoutSeconds = 60 }) { _, _ in }
        defer { server.stop() }

        let client = CurlHTTPClient(maxConcurrent: 1)
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/never"))
        let holder = Task { try? await client.send(HTTPClientRequest(url: url, timeout: .seconds(30))) }
        defer { holder.cancel() }
        #expect(await eventually { server.parkedRequestCount == 1 })

        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url, timeout: .milliseconds(200)))
        }
        #expect(error?.kind == .timeout)
        #expect(server.parkedRequestCount == 1)
    }

    @Test("500 concurrent requests all succeed over reused connections")
    func manyConcurrentReuseConnections() async throws {
        let server = try startServer { request, respond in respond(.text(200, "n=\(request.rawQuery)")) }
        defer { server.stop() }

        let client = CurlHTTPClient(maxConcurrent: 64)
        let port = server.boundPort
        let bodies = try await withThrowingTaskGroup(of: Bool.self, returning: [Bool].self) { group in
            for n in 0..<500 {
                group.addTask {
                    let url = try #require(URL(string: "http://127.0.0.1:\(port)/n?\(n)"))
                    let response = try await client.send(HTTPClientRequest(url: url, timeout: .seconds(30)))
                    return response.status == 200 && response.body == Array("n=\(n)".utf8)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 500)
        #expect(bodies.allSatisfy { $0 })
        // At most one connection per slot; without reuse it would be one per request.
        #expect(client.connectionsOpened >= 1)
        #expect(client.connectionsOpened <= 64)
    }

    @Test("a cancelled call gives its slot back once curl lets go of it")
    func cancellationFreesSlot() async throws {
        let server = try startServer({ $0.handlerTimeoutSeconds = 60 }) { request, respond in
            if request.path == "/ok" { respond(.text(200, "ok")) }
        }
        defer { server.stop() }

        let client = CurlHTTPClient(maxConcurrent: 1)
        let never = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/never"))
        let call = Task { try? await client.send(HTTPClientRequest(url: never, timeout: .seconds(30))) }
        #expect(await eventually { server.parkedRequestCount == 1 })
        call.cancel()
        _ = await call.value

        let ok = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/ok"))
        let response = try await client.send(HTTPClientRequest(url: ok, timeout: .seconds(5)))
        #expect(response.status == 200)
    }

    @Test("shutdown ends a call in flight without crashing it, and refuses later calls with .connection")
    func shutdownWithCallInFlight() async throws {
        let server = try startServer({ $0.handlerTimeoutSeconds = 60 }) { _, _ in }
        defer { server.stop() }

        let client = CurlHTTPClient()
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/never"))
        let call = Task { await failureKind(of: client, url: url) }
        #expect(await eventually { server.parkedRequestCount == 1 })
        client.shutdown()
        let kind = await call.value
        #expect(kind == .cancelled || kind == .connection)

        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url, timeout: .seconds(5)))
        }
        #expect(error?.kind == .connection)
    }

    @Test("HTTPS verifies the peer: a self-signed certificate is refused with .connection and nothing is sent",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func untrustedCertificateRefused() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("payhook-curl-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                             "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        // Awaited through the termination handler: waitUntilExit would block a cooperative
        // thread (one of two here) for the whole RSA key generation.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            openssl.terminationHandler = { _ in continuation.resume() }
            do { try openssl.run() } catch { continuation.resume(throwing: error) }
        }
        try #require(openssl.terminationStatus == 0)

        let hits = Shared(0)
        let server = try startServer({ $0.tlsKeyPath = key; $0.tlsCertificatePath = certificate }) { _, respond in
            hits.update { $0 += 1 }
            respond(.text(200, "ok"))
        }
        defer { server.stop() }

        let client = CurlHTTPClient()
        let url = try #require(URL(string: "https://127.0.0.1:\(server.boundPort)/charge"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(method: "POST", url: url, body: Array("{}".utf8), timeout: .seconds(5)))
        }
        #expect(error?.kind == .connection)
        #expect(error?.message.contains("curl error 60") == true)  // CURLE_PEER_FAILED_VERIFICATION
        #expect(hits.value == 0)
    }

    @Test("only http and https URLs are sent")
    func otherSchemesRefused() async throws {
        let client = CurlHTTPClient()
        let url = try #require(URL(string: "file:///etc/passwd"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url))
        }
        #expect(error?.kind == .connection)
    }

    @Test("a header value with a line break is not sent")
    func headerInjectionRefused() async throws {
        let hits = Shared(0)
        let server = try startServer { _, respond in hits.update { $0 += 1 }; respond(.text(200, "")) }
        defer { server.stop() }

        let client = CurlHTTPClient()
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url, headers: [("X-A", "1\r\nX-Injected: 2")]))
        }
        #expect(error?.kind == .connection)
        #expect(error?.message.contains("X-Injected") == false)
        #expect(hits.value == 0)
    }

    @Test("curl result codes map to the HTTPClientError kinds every client reports", arguments: [
        (UInt32(28), 0, HTTPClientError.Kind.timeout),          // operation timed out
        (7, Int(ETIMEDOUT), .timeout),                          // connect timed out
        (7, Int(ECONNREFUSED), .connection),                    // connection refused
        (6, 0, .connection),                                    // host not resolved
        (35, 0, .connection),                                   // TLS handshake failed
        (60, 0, .connection),                                   // peer certificate not trusted
        (55, Int(ECONNRESET), .connection),                     // send failed
        (56, Int(ECONNRESET), .connection),                     // receive failed
        (18, 0, .connection),                                   // body shorter than announced
        (52, 0, .invalidResponse),                              // empty reply
        (8, 0, .invalidResponse),                               // weird server reply
        (1, 0, .invalidResponse),                               // HTTP/0.9 refused
        (42, 0, .cancelled),                                    // aborted by callback
    ])
    func errorKinds(code: UInt32, osErrno: Int, kind: HTTPClientError.Kind) {
        #expect(CurlHTTPClient.errorKind(curlCode: code, osErrno: osErrno) == kind)
    }
}
