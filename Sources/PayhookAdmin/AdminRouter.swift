package import PayhookHTTP
package import PayhookCore

/// One admin API, mounted under a path prefix such as `/v1/dead-letters`.
///
/// An API only answers; the router finds it, runs it off the listener's thread and turns a
/// thrown error into the admin error shape (`OperationsError.httpResponse`).
package protocol AdminRoutes: Sendable {
    /// The path this API owns, without a trailing slash: it answers the prefix and everything below it.
    var prefix: String { get }
    /// Every operation this API answers and the scope each needs; the listener refuses a call
    /// outside its credential's scope before `respond` runs.
    var operations: [AdminOperation] { get }
    /// The answer to `request`.
    /// - Parameter route: the path segments after the prefix (`[]` for the prefix itself;
    ///   `/v1/dead-letters/7/replay` gives `["7", "replay"]`).
    /// - Parameter caller: the credential that was checked; audited actions name it.
    func respond(to request: HTTPRequest, route: [String], caller: AdminCaller) async throws -> HTTPResponse
}

extension AdminRoutes {
    /// The segments after `prefix` when `path` is under it; nil otherwise. Empty segments are
    /// kept, so `/v1/orders/` is `[""]` and answers as an unknown id would.
    package func route(of path: String) -> [String]? {
        guard path == prefix || path.hasPrefix(prefix + "/") else { return nil }
        return path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
    }

    /// Answers `request` when its path is under this API's prefix; returns false otherwise.
    /// (A router of one, for tests that drive one API; no scope check.)
    package func handle(_ request: HTTPRequest, caller: AdminCaller = AdminCaller(name: "admin-api", scope: .operator),
                        respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        AdminRouter([self]).dispatch(request, caller: caller, respond: respond)
    }
}

/// The admin listener's dispatch: the first API whose prefix holds the path answers it.
package struct AdminRouter: Sendable {
    private let apis: [any AdminRoutes]

    package init(_ apis: [any AdminRoutes]) {
        self.apis = apis
    }

    /// Every operation of every API, for the listener's scope check.
    package var operations: [AdminOperation] { apis.flatMap(\.operations) }

    /// Answers `request` asynchronously when an API owns its path; returns false otherwise, so
    /// the listener can answer what is not an API (metrics, 404).
    package func dispatch(_ request: HTTPRequest, caller: AdminCaller, respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        for api in apis {
            guard let route = api.route(of: request.path) else { continue }
            Task {
                let response: HTTPResponse
                do {
                    response = try await api.respond(to: request, route: route, caller: caller)
                } catch {
                    response = OperationsError.wrapping(error).httpResponse
                }
                respond(response)
            }
            return true
        }
        return false
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
