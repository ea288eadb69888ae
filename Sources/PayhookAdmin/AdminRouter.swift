package import PayhookHTTP
package import PayhookCore

/// One admin API, mounted under a path prefix such as `/v1/dead-letters`.
///
/// An API lists its endpoints; the router finds the one whose method and path template fit,
/// checks the caller's bearer credential and scope, runs it off the listener's thread and turns
/// a thrown error into the admin error shape (`OperationsError.httpResponse`).
package protocol AdminRoutes: Sendable {
    /// The path this API owns, without a trailing slash: it answers the prefix and everything below it.
    var prefix: String { get }
    /// Every operation this API answers, the scope each needs and what answers it. A path under
    /// the prefix that none fits is 404; one that fits with another method is 405.
    var endpoints: [AdminEndpoint] { get }
}

/// One operation of an admin API and what answers it.
package struct AdminEndpoint: Sendable {
    package let operation: AdminOperation
    let answer: @Sendable (HTTPRequest, [String], AdminCaller) async throws -> HTTPResponse

    /// - Parameter answer: gets the request, the path segments the template's `{name}` segments
    ///   stand for (in order: `/v1/dead-letters/7/replay` gives `["7"]`), and the checked caller,
    ///   whom audited actions name.
    package init(_ method: String, _ template: String, _ scope: AdminScope,
                 answer: @escaping @Sendable (_ request: HTTPRequest, _ parameters: [String], _ caller: AdminCaller) async throws -> HTTPResponse) {
        self.operation = AdminOperation(method, template, scope)
        self.answer = answer
    }
}

extension AdminRoutes {
    /// The operations of `endpoints`: the scope check's table, which docs/admin-api.openapi.json documents.
    package var operations: [AdminOperation] { endpoints.map(\.operation) }

    /// Answers `request` when its path is under this API's prefix; returns false otherwise.
    /// (A router of one, for tests that drive one API; no credential or scope check.)
    package func handle(_ request: HTTPRequest, caller: AdminCaller = AdminCaller(name: "admin-api", scope: .operator),
                        respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        let entry = AdminRoute.api(self)
        guard let route = entry.segments(of: request.path), case .bearer(let answer) = entry.access else { return false }
        AdminRouter.run(respond) { try await answer(request, route, caller) }
        return true
    }
}

/// One entry of the admin listener's route table: the path it owns, who may call it, the
/// operations it documents and what answers.
package struct AdminRoute: Sendable {
    /// Who may call the entry, with what answers; only a bearer entry is handed a checked caller.
    enum Access: Sendable {
        /// Anyone, without a credential: the health probes of a load balancer or supervisor.
        case publicProbe(@Sendable (HTTPRequest) async -> HTTPResponse)
        /// A browser signed in to the console: the console checks its own session cookie and
        /// CSRF token (a browser cannot send the bearer header), so no bearer check runs first.
        case consoleSession(@Sendable (HTTPRequest, [String]) async -> HTTPResponse)
        /// A bearer credential whose scope covers the operation (`AdminOperation.scope`): 401
        /// without one, 403 outside its scope.
        case bearer(@Sendable (HTTPRequest, [String], AdminCaller) async throws -> HTTPResponse)
    }

    /// The path this entry owns, without a trailing slash.
    package let prefix: String
    /// Whether the paths below `prefix` are this entry's too (`/v1/orders/7`); a probe or
    /// `/metrics` owns its one path.
    package let ownsSubpaths: Bool
    /// The documented operations (docs/admin-api.openapi.json) and the scope each needs.
    package let operations: [AdminOperation]
    let access: Access

    /// A path anyone may ask, answered by `answer` whatever the method.
    package static func publicProbe(_ path: String, operations: [AdminOperation],
                                    answer: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) -> AdminRoute {
        AdminRoute(prefix: path, ownsSubpaths: false, operations: operations, access: .publicProbe(answer))
    }

    /// A surface that signs browsers in with a session of its own: `answer` gets the path
    /// segments after `prefix` and does its own session and CSRF checks.
    package static func consoleSession(_ prefix: String,
                                       answer: @escaping @Sendable (HTTPRequest, [String]) async -> HTTPResponse) -> AdminRoute {
        AdminRoute(prefix: prefix, ownsSubpaths: true, operations: [], access: .consoleSession(answer))
    }

    /// A path for bearer credentials, whose scope `operations` state.
    package static func bearer(_ path: String, ownsSubpaths: Bool = false, operations: [AdminOperation],
                               answer: @escaping @Sendable (HTTPRequest, [String], AdminCaller) async throws -> HTTPResponse) -> AdminRoute {
        AdminRoute(prefix: path, ownsSubpaths: ownsSubpaths, operations: operations, access: .bearer(answer))
    }

    /// A JSON API: bearer credentials, everything under its prefix, answered by the endpoint
    /// whose method and template fit the path; a path an endpoint fits with another method is
    /// 405, a path none fits 404, both in the admin error shape.
    package static func api(_ api: some AdminRoutes) -> AdminRoute {
        let endpoints = api.endpoints
        return bearer(api.prefix, ownsSubpaths: true, operations: endpoints.map(\.operation)) { request, _, caller in
            for endpoint in endpoints where endpoint.operation.method == request.method {
                if let parameters = endpoint.operation.parameters(of: request.path) {
                    return try await endpoint.answer(request, parameters, caller)
                }
            }
            return endpoints.contains(where: { $0.operation.matches(path: request.path) })
                ? .adminMethodNotAllowed(request.method) : .adminNoSuchRoute
        }
    }

    /// The segments after `prefix` when this entry owns `path`; nil otherwise. Empty segments
    /// are kept, so `/v1/orders/` is `[""]` and answers as an unknown id would.
    package func segments(of path: String) -> [String]? {
        if path == prefix { return [] }
        guard ownsSubpaths, path.hasPrefix(prefix + "/") else { return nil }
        return path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
    }
}

/// The bearer check the router runs before a `.bearer` surface (and before the 404 of a path
/// no entry owns): the credential a request carries and whether its scope covers `needed`.
package protocol AdminBearerGate: Sendable {
    func check(_ request: HTTPRequest, needs needed: AdminScope?) -> AdminGateDecision
}

package enum AdminGateDecision: Sendable {
    case allowed(AdminCaller)
    /// The refusal to send: 401 or 403 (`AdminAuthorization`).
    case refused(HTTPResponse)
}

/// The admin listener's one dispatch: the first entry of the table that owns the path answers,
/// after the check its access names.
package struct AdminRouter: Sendable {
    private let routes: [AdminRoute]
    private let gate: any AdminBearerGate
    /// Every operation of every entry, for the scope check; docs/admin-api.openapi.json
    /// documents exactly these.
    package let operations: [AdminOperation]

    /// - Parameter routes: the route table, in the order paths are matched.
    /// - Parameter gate: the bearer check of `.bearer` entries.
    package init(_ routes: [AdminRoute], gate: any AdminBearerGate) {
        self.routes = routes
        self.gate = gate
        self.operations = routes.flatMap(\.operations)
    }

    /// Answers `request`, asynchronously except for a refusal. A path no entry owns is answered
    /// 404 after the bearer check, so a caller without a credential cannot map the routes.
    package func dispatch(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        guard let (route, segments) = routes.lazy.compactMap({ route in route.segments(of: request.path).map { (route, $0) } }).first else {
            if case .refused(let refusal) = checkBearer(request) {
                respond(refusal)
            } else {
                respond(.text(404, "not found\n"))
            }
            return
        }
        switch route.access {
        case .publicProbe(let answer):
            Self.run(respond) { await answer(request) }
        case .consoleSession(let answer):
            Self.run(respond) { await answer(request, segments) }
        case .bearer(let answer):
            switch checkBearer(request) {
            case .allowed(let caller):
                Self.run(respond) { try await answer(request, segments, caller) }
            case .refused(let refusal):
                respond(refusal)
            }
        }
    }

    private func checkBearer(_ request: HTTPRequest) -> AdminGateDecision {
        gate.check(request, needs: AdminAuthorization.neededScope(method: request.method, path: request.path, operations: operations))
    }

    /// Runs `answer` off the listener's thread; a thrown error becomes the admin error shape.
    static func run(_ respond: @escaping @Sendable (HTTPResponse) -> Void, _ answer: @escaping @Sendable () async throws -> HTTPResponse) {
        Task {
            do {
                respond(try await answer())
            } catch {
                respond(OperationsError.wrapping(error).httpResponse)
            }
        }
    }
}

extension HTTPResponse {
    /// A JSON answer of the admin API.
    package static func admin(_ status: Int, _ document: JSONOutput) -> HTTPResponse {
        .json(status, Array(document.rendered.utf8))
    }

    /// 405 in the admin error shape.
    package static func adminMethodNotAllowed(_ method: String) -> HTTPResponse {
        admin(405, .object([.init("code", .string("method_not_allowed")),
                            .init("message", .string("method \(method) is not allowed here"))]))
    }

    /// 404 in the admin error shape, for a path under an API that names no route.
    package static let adminNoSuchRoute = admin(404, .object([.init("code", .string("not_found")),
                                                              .init("message", .string("no such admin route"))]))
}

extension OperationsError {
    /// The admin API's answer for this error: its status and `{"code", "message", "field"}`.
    package var httpResponse: HTTPResponse { .admin(httpStatus, json) }
}
