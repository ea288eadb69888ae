import Foundation
import PayhookHTTP
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

    package init(operations: DeadLetterOperations) {
        self.letters = operations
    }

    package var endpoints: [AdminEndpoint] {
        let letters = letters
        /// Replay or discard: the credential is the actor; the optional body's `actor` a note.
        @Sendable func act(_ request: HTTPRequest, _ id: String, _ caller: AdminCaller, replay: Bool) async throws -> HTTPResponse {
            let id = try AdminRequest.pathID(id, of: "dead letter")
            let body = try OperatorAction.parseBody(request.body)
            let action = caller.action(request, note: body.note, actorNote: body.actor)
            let outcome = replay ? try await letters.replay(id: id, by: action) : try await letters.discard(id: id, by: action)
            return .admin(200, outcome.json)
        }
        return [
            AdminEndpoint("GET", "/v1/dead-letters", .operator) { request, _, _ in
                let list = try await letters.list(try Self.filter(query: request.rawQuery))
                return .admin(200, .object([.init("dead_letters", .array(list.map(\.json)))]))
            },
            AdminEndpoint("GET", "/v1/dead-letters/{id}", .operator) { _, path, _ in
                .admin(200, try await letters.detail(id: try AdminRequest.pathID(path[0], of: "dead letter")).json)
            },
            AdminEndpoint("POST", "/v1/dead-letters/{id}/replay", .operator) { request, path, caller in
                try await act(request, path[0], caller, replay: true)
            },
            AdminEndpoint("POST", "/v1/dead-letters/{id}/discard", .operator) { request, path, caller in
                try await act(request, path[0], caller, replay: false)
            },
        ]
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
