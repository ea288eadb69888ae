import Foundation
package import PayhookHTTP
package import PayhookAdmin

/// The admin listener's `/v1/dead-letters` routes: JSON over the same `DeadLetterOperations`
/// the CLI uses. Authorization happens before this is called (`AdminAuthorization`).
///
/// Errors are `{"code": …, "message": …, "field": …}` with a stable `code`; bad input is 400 and
/// names the query parameter or body field at fault. Replay here executes (an HTTP client asks
/// explicitly); use `GET /v1/dead-letters/{id}` for what it would do.
package struct DeadLetterAdminAPI: AdminRoutes {
    let letters: DeadLetterOperations

    package let prefix = "/v1/dead-letters"
    package let operations: [AdminOperation] = [
        AdminOperation("GET", "/v1/dead-letters", .operator),
        AdminOperation("GET", "/v1/dead-letters/{id}", .operator),
        AdminOperation("POST", "/v1/dead-letters/{id}/replay", .operator),
        AdminOperation("POST", "/v1/dead-letters/{id}/discard", .operator),
    ]

    package init(operations: DeadLetterOperations) {
        self.letters = operations
    }

    package func respond(to request: HTTPRequest, route: [String], caller: AdminCaller) async throws -> HTTPResponse {
        switch (request.method, route.count) {
        case ("GET", 0):
            let letters = try await letters.list(try Self.filter(query: request.rawQuery))
            return .admin(200, .object([.init("dead_letters", .array(letters.map(\.json)))]))
        case ("GET", 1):
            return .admin(200, try await letters.detail(id: try AdminRequest.pathID(route[0], of: "dead letter")).json)
        case ("POST", 2) where route[1] == "replay" || route[1] == "discard":
            let id = try AdminRequest.pathID(route[0], of: "dead letter")
            let body = try OperatorAction.parseBody(request.body)
            let action = caller.action(request, note: body.note, actorNote: body.actor)
            let outcome = route[1] == "replay"
                ? try await letters.replay(id: id, by: action)
                : try await letters.discard(id: id, by: action)
            return .admin(200, outcome.json)
        default:
            // Not one of `operations`: the router answered 405 or 404 before calling.
            return .adminNoSuchRoute
        }
    }

    static func filter(query: String) throws(OperationsError) -> DeadLetterFilter {
        var filter = DeadLetterFilter()
        filter.limit = 100
        for (name, value) in AdminRequest.queryPairs(query) {
            switch name {
            case "status":
                guard let status = DeadLetter.Status(rawValue: value) else {
                    throw .invalid("status", "status must be open, replayed or discarded")
                }
                filter.status = status
            case "source":
                guard let source = DeadLetter.Source(rawValue: value) else {
                    throw .invalid("source", "source must be inbound_event or job")
                }
                filter.source = source
            case "provider": filter.provider = value
            case "reason": filter.reason = value
            case "since":
                guard let since = SinceArgument.parse(value) else { throw .invalid("since", "since: \(SinceArgument.help)") }
                filter.createdSince = since
            case "limit": filter.limit = try AdminRequest.limit(value)
            default:
                throw .invalid(name, "unknown query parameter \(name); known: status, source, provider, reason, since, limit")
            }
        }
        return filter
    }
}
