import PayhookCore
package import PayhookHTTP

/// One documented operation of the admin listener and the scope it needs.
///
/// Each API lists its operations (`AdminRoutes.operations`); the listener checks a request's
/// scope against this list before the API runs, and a test compares the list with
/// docs/admin-api.openapi.json, so a route cannot be added without saying who may use it.
package struct AdminOperation: Sendable, Hashable, CustomStringConvertible {
    package let method: String
    /// The path with `{name}` for one variable segment, as in the OpenAPI document.
    package let template: String
    /// The scope it needs (an operator credential may do everything); nil for the health checks,
    /// which need no credential.
    package let scope: AdminScope?

    package init(_ method: String, _ template: String, _ scope: AdminScope?) {
        self.method = method
        self.template = template
        self.scope = scope
    }

    package var description: String { "\(method) \(template)" }

    /// Whether `method path` is this operation: the same method and a path that fits the template.
    package func matches(method: String, path: String) -> Bool {
        method == self.method && matches(path: path)
    }

    /// Whether `path` fits the template: same number of segments, literal segments equal.
    package func matches(path: String) -> Bool {
        parameters(of: path) != nil
    }

    /// The segments of `path` that the template's `{name}` segments stand for, in order, when
    /// `path` fits the template; nil otherwise. `/v1/orders/7` under `/v1/orders/{id}` is `["7"]`.
    package func parameters(of path: String) -> [String]? {
        let wanted = template.split(separator: "/", omittingEmptySubsequences: false)
        let given = path.split(separator: "/", omittingEmptySubsequences: false)
        guard wanted.count == given.count else { return nil }
        var parameters: [String] = []
        for (pattern, segment) in zip(wanted, given) {
            if pattern.hasPrefix("{") && pattern.hasSuffix("}") {
                parameters.append(String(segment))
            } else if pattern != segment {
                return nil
            }
        }
        return parameters
    }
}

/// Who is calling the admin listener: the credential the bearer token matched.
package struct AdminCaller: Sendable, Equatable {
    /// The credential's name, the audit log's actor.
    package let name: String
    package let scope: AdminScope

    package init(name: String, scope: AdminScope) {
        self.name = name
        self.scope = scope
    }

    package init(_ credential: AdminCredential) {
        self.init(name: credential.name, scope: credential.scope)
    }

    /// The audited action of this caller through the admin API: the credential is the actor; an
    /// `actor` a client names in the body is only a note beside it.
    package func action(_ request: HTTPRequest, note: String? = nil, actorNote: String? = nil) -> OperatorAction {
        OperatorAction(actor: name, actorNote: actorNote, note: note, context: [
            .init("via", .string("admin_api")), .init("remote_addr", .string(request.remoteAddress)),
        ])
    }
}

/// The bearer-token check of the admin listener and the scope check after it.
package enum AdminAuthorization {
    /// The token of an `Authorization: Bearer …` header, or nil when there is none.
    package static func bearerToken(_ request: HTTPRequest) -> String? {
        guard let header = request.header("authorization") else { return nil }
        let prefix = "bearer "
        guard header.count > prefix.count, header.lowercased().hasPrefix(prefix) else { return nil }
        return String(header.dropFirst(prefix.count))
    }

    /// The scope `method path` needs according to `operations`; a path no operation documents
    /// needs `operator`, so a route added without a scope is closed to the narrower credentials.
    package static func neededScope(method: String, path: String, operations: [AdminOperation]) -> AdminScope? {
        // HEAD is answered as GET by the listener, so it needs what GET needs.
        let method = method == "HEAD" ? "GET" : method
        if let operation = operations.first(where: { $0.matches(method: method, path: path) }) { return operation.scope }
        return .operator
    }

    /// 403 in the admin error shape, naming the scope the route needs.
    package static func forbidden(needed: AdminScope) -> HTTPResponse {
        .admin(403, .object([
            .init("code", .string("forbidden")),
            .init("message", .string("this route needs a credential with the \(needed.rawValue) scope (or operator)")),
        ]))
    }

    /// 401 for a missing or unknown token. Plain text, as before scopes existed.
    package static let unauthorized = HTTPResponse(status: 401, headers: [("WWW-Authenticate", "Bearer")],
                                                   body: Array("unauthorized\n".utf8))
}
