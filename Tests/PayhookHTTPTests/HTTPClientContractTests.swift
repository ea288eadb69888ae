import Dispatch
import Foundation
import PayhookCore
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookHTTP

/// What every `HTTPClient` promises, held against each implementation. What only one of them
/// promises lives in its own suite.
@Suite("HTTPClient contract", .serialized)
struct HTTPClientContractTests {
    enum ClientKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case curl

        func make(maxConcurrent: Int = 64) -> any HTTPClient {
            switch self {
            case .curl: CurlHTTPClient(maxConcurrent: maxConcurrent)
            }
        }

        var testDescription: String { rawValue }
    }

    @Test("a request reaches the server with its method, headers and body, and the response comes back whole", arguments: ClientKind.allCases)
    func success(kind: ClientKind) async throws {
        let seen = Shared<HTTPRequest?>(nil)
        let server = try startServer { request, respond in
            seen.update { $0 = request }
            respond(HTTPResponse(status: 202, headers: [("X-Reply", "yes")], body: request.body.reversed()))
        }
        defer { server.stop() }

        let client = kind.make(maxConcurrent: 4)
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/callbacks/order?id=7"))
        let response = try await client.send(HTTPClientRequest(
            method: "POST", url: url, headers: [("X-Token", "t1"), ("Content-Type", "application/json")],
            body: Array("[1,2,3]".utf8), timeout: .seconds(5)))

        #expect(response.status == 202)
        #expect(response.body == Array("]3,2,1[".utf8))
        #expect(response.headers.contains { $0.0.lowercased() == "x-reply" && $0.1 == "yes" })
        let request = try #require(seen.value)
        #expect(request.method == "POST")
        #expect(request.path == "/callbacks/order")
        #expect(request.rawQuery == "id=7")
        #expect(request.header("x-token") == "t1")
        #expect(request.body == Array("[1,2,3]".utf8))
    }

    @Test("the deadline is enforced by the client itself against a handler that never responds, and the query stays out of the message", arguments: ClientKind.allCases)
    func timeoutEnforced(kind: ClientKind) async throws {
        let pending = Shared<[@Sendable (HTTPResponse) -> Void]>([])
        let server = try startServer({ $0.handlerTimeoutSeconds = 60 }) { _, respond in
            pending.update { $0.append(respond) }
        }
        defer { server.stop() }

        let client = kind.make()
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/never?secret=s3cr3t"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url, timeout: .milliseconds(300)))
        }
        #expect(error?.kind == .timeout)
        // The client's own message (URLSession's backstop timer fires a second later).
        #expect(error?.message.contains("no response within") == true)
        #expect(error?.message.contains("s3cr3t") == false)
    }

    @Test("no more than maxConcurrent requests are in flight at once, and all complete", arguments: ClientKind.allCases)
    func boundsConcurrency(kind: ClientKind) async throws {
        let inFlight = Shared((now: 0, peak: 0))
        let responder = DispatchQueue(label: "test.responder", attributes: .concurrent)
        let server = try startServer { _, respond in
            inFlight.update { $0.now += 1; $0.peak = max($0.peak, $0.now) }
            responder.asyncAfter(deadline: .now() + .milliseconds(50)) {
                inFlight.update { $0.now -= 1 }
                respond(.text(200, "ok"))
            }
        }
        defer { server.stop() }

        let client = kind.make(maxConcurrent: 2)
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/slow"))
        let statuses = try await withThrowingTaskGroup(of: Int.self, returning: [Int].self) { group in
            for _ in 0..<12 {
                group.addTask { try await client.send(HTTPClientRequest(url: url, timeout: .seconds(10))).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 12))
        #expect(inFlight.value.peak <= 2)
        #expect(inFlight.value.peak >= 1)
    }

    @Test("cancelling the calling task ends the call with .cancelled", arguments: ClientKind.allCases)
    func cancellation(kind: ClientKind) async throws {
        let server = try startServer({ $0.handlerTimeoutSeconds = 60 }) { _, _ in }
        defer { server.stop() }

        let client = kind.make()
        let url = try #require(URL(string: "http://127.0.0.1:\(server.boundPort)/never"))
        let call = Task { await failureKind(of: client, url: url) }
        #expect(await eventually { server.parkedRequestCount == 1 })
        call.cancel()
        #expect(await call.value == .cancelled)
    }

    @Test("a refused connection is reported as .connection", arguments: ClientKind.allCases)
    func connectionRefused(kind: ClientKind) async throws {
        // Bind and release a port so that nothing listens on it.
        let server = try startServer { _, respond in respond(.text(200, "")) }
        let port = server.boundPort
        server.stop()

        let client = kind.make()
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: url, timeout: .seconds(5)))
        }
        #expect(error?.kind == .connection)
    }
}
