import PayhookCore
import PayhookHTTP
import Synchronization
import Testing
@testable import PayhookAdmin

/// The admin listener's one route table: how an entry owns a path, and which check runs before
/// each kind of entry (none for a probe, the console's own for the console, the bearer gate for
/// the rest and for a path no entry owns). The HTTP suites (AdminScope, Console,
/// HealthAndMetrics) cover the real table end to end.
@Suite("AdminRouter: one route table for the admin listener")
struct AdminRouterTests {
    /// A gate that lets `allowed` through and refuses everyone else with 401, and remembers
    /// the scope it was asked for each request.
    final class RecordingGate: AdminBearerGate {
        let asked = Mutex<[String: AdminScope?]>([:])

        func check(_ request: HTTPRequest, needs needed: AdminScope?) -> AdminGateDecision {
            asked.withLock { $0[request.method + " " + request.path] = needed }
            guard AdminAuthorization.bearerToken(request) == "good" else { return .refused(AdminAuthorization.unauthorized) }
            return .allowed(AdminCaller(name: "tester", scope: .operator))
        }
    }

    static func router(_ gate: RecordingGate) -> AdminRouter {
        AdminRouter([
            .publicProbe("/healthz", operations: [AdminOperation("GET", "/healthz", nil)]) { _ in .text(200, "probe\n") },
            .consoleSession("/console") { _, segments in .text(200, "console " + segments.joined(separator: ",") + "\n") },
            .bearer("/v1/things", ownsSubpaths: true, operations: [AdminOperation("GET", "/v1/things/{id}", .merchant)]) { _, segments, caller in
                .text(200, "things " + segments.joined(separator: ",") + " for \(caller.name)\n")
            },
        ], gate: gate)
    }

    func send(_ router: AdminRouter, _ method: String, _ path: String, token: String? = nil) async -> (Int, String) {
        let request = HTTPRequest(method: method, path: path, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
        let response = await withCheckedContinuation { continuation in
            router.dispatch(request) { continuation.resume(returning: $0) }
        }
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test("an entry owns its path, and the paths below it only when it says so; empty segments are kept")
    func matching() {
        let probe = AdminRoute.publicProbe("/healthz", operations: []) { _ in .text(200, "") }
        #expect(probe.segments(of: "/healthz") == [])
        #expect(probe.segments(of: "/healthz/deep") == nil)
        #expect(probe.segments(of: "/healthzz") == nil)
        let api = AdminRoute.bearer("/v1/orders", ownsSubpaths: true, operations: []) { _, _, _ in .text(200, "") }
        #expect(api.segments(of: "/v1/orders") == [])
        #expect(api.segments(of: "/v1/orders/") == [""])
        #expect(api.segments(of: "/v1/orders/7/replay") == ["7", "replay"])
        #expect(api.segments(of: "/v1/ordersx") == nil)
    }

    @Test("a probe and the console answer without the bearer gate; a bearer entry and an unowned path pass it first")
    func checksByAccess() async {
        let gate = RecordingGate()
        let router = Self.router(gate)
        #expect(router.operations.map(\.description) == ["GET /healthz", "GET /v1/things/{id}"])

        #expect(await send(router, "GET", "/healthz") == (200, "probe\n"))
        #expect(await send(router, "GET", "/console/dead-letters/7") == (200, "console dead-letters,7\n"))
        #expect(gate.asked.withLock { $0.isEmpty }, "no bearer check before a probe or the console")

        #expect(await send(router, "GET", "/v1/things/7") == (401, "unauthorized\n"))
        #expect(await send(router, "GET", "/v1/things/7", token: "good") == (200, "things 7 for tester\n"))
        #expect(gate.asked.withLock { $0["GET /v1/things/7"] } == .some(.merchant), "the scope of the documented operation")

        #expect(await send(router, "GET", "/nowhere") == (401, "unauthorized\n"))
        #expect(await send(router, "GET", "/nowhere", token: "good") == (404, "not found\n"))
        #expect(gate.asked.withLock { $0["GET /nowhere"] } == .some(.operator), "an undocumented path needs operator")
        #expect(await send(router, "GET", "/healthz/deep", token: "good") == (404, "not found\n"))
    }

    /// An API of two endpoints that echo the path parameters they are handed, and count calls.
    final class EchoAPI: AdminRoutes {
        let calls = Mutex(0)
        let prefix = "/v1/echo"

        var endpoints: [AdminEndpoint] {
            let echo: @Sendable (HTTPRequest, [String], AdminCaller) async throws -> HTTPResponse = { [self] _, parameters, _ in
                self.calls.withLock { $0 += 1 }
                return .text(200, "echo " + parameters.joined(separator: ",") + "\n")
            }
            return [AdminEndpoint("GET", "/v1/echo", .merchant, answer: echo), AdminEndpoint("POST", "/v1/echo/{id}/poke", .merchant, answer: echo)]
        }
    }

    @Test("an API is handed only its endpoints, with their path parameters: another method on a listed path is 405, an unlisted path 404, in the admin shape")
    func apiOperationsDecideWhatReachesIt() async throws {
        let api = EchoAPI()
        func call(_ method: String, _ path: String) async -> (Int, String) {
            let response = await withCheckedContinuation { continuation in
                #expect(api.handle(HTTPRequest(method: method, path: path)) { continuation.resume(returning: $0) })
            }
            return (response.status, String(decoding: response.body, as: UTF8.self))
        }
        #expect(await call("GET", "/v1/echo") == (200, "echo \n"))
        #expect(await call("POST", "/v1/echo/7/poke") == (200, "echo 7\n"))
        #expect(api.calls.withLock { $0 } == 2)

        let notAllowed = #"{"code":"method_not_allowed","message":"method DELETE is not allowed here"}"#
        #expect(await call("DELETE", "/v1/echo") == (405, notAllowed))
        #expect(await call("HEAD", "/v1/echo").0 == 405)
        #expect(await call("GET", "/v1/echo/7/poke").0 == 405)
        let noRoute = #"{"code":"not_found","message":"no such admin route"}"#
        #expect(await call("GET", "/v1/echo/7") == (404, noRoute))
        #expect(await call("POST", "/v1/echo/7/prod") == (404, noRoute))
        #expect(api.calls.withLock { $0 } == 2, "the API never saw what it does not list")
    }
}
