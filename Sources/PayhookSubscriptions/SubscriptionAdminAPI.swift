import Foundation
import PayhookHTTP
package import PayhookAdmin
package import PayhookPostgres
import PayhookCore

/// The admin listener's `/v1/subscriptions` routes: JSON over the same `SubscriptionOperations`
/// the CLI uses. Authorization happens before this is called (`AdminAuthorization`).
///
/// | route                                   | does                                           |
/// |-----------------------------------------|------------------------------------------------|
/// | `POST /v1/subscriptions`                | create (201 with the subscription and its `id`) |
/// | `GET /v1/subscriptions`                 | list (`?status=`, `?provider=`, `?limit=`)      |
/// | `GET /v1/subscriptions/{id}`            | one, with its charges                           |
/// | `POST /v1/subscriptions/{id}/cancel`    | cancel; also `pause`, `resume`                  |
///
/// Errors are `{"code", "message", "field"}` like the dead-letter routes: 400 names the body
/// field (dotted, `amount.value`) or query parameter at fault, 404 an unknown id or token, 409 a
/// reference already used or an action the status forbids. Action bodies are optional:
/// `{"note": "…", "actor": "…"}`.
package struct SubscriptionAdminAPI: AdminRoutes {
    let subscriptions: SubscriptionOperations

    init(operations: SubscriptionOperations) {
        self.subscriptions = operations
    }

    /// The routes over `pool`, as `PayhookServer` wires them.
    package init(pool: PostgresPool) {
        self.init(operations: SubscriptionOperations(pool: pool))
    }

    package let prefix = "/v1/subscriptions"
    package static let actions: Set<String> = ["cancel", "pause", "resume"]

    package var endpoints: [AdminEndpoint] {
        let subscriptions = subscriptions
        /// Cancel, pause or resume: the credential is the actor; the optional body's `actor` a note.
        @Sendable func act(_ request: HTTPRequest, _ id: String, _ caller: AdminCaller, _ verb: String) async throws -> HTTPResponse {
            let id = try AdminRequest.pathID(id, of: "subscription")
            let body = try OperatorAction.parseBody(request.body)
            let action = caller.action(request, note: body.note, actorNote: body.actor)
            let outcome = switch verb {
            case "cancel": try await subscriptions.cancel(id: id, by: action)
            case "pause": try await subscriptions.pause(id: id, by: action)
            default: try await subscriptions.resume(id: id, by: action)
            }
            return .admin(200, outcome.json)
        }
        return [
            AdminEndpoint("POST", "/v1/subscriptions", .merchant) { request, _, caller in
                let draft = try NewSubscription.parse(request.body, now: subscriptions.now())
                let created = try await subscriptions.create(draft, by: caller.action(request, actorNote: draft.actor))
                return .admin(201, created.json)
            },
            AdminEndpoint("GET", "/v1/subscriptions", .merchant) { request, _, _ in
                let query = try Self.listQuery(request.rawQuery)
                let list = try await subscriptions.list(status: query.status, provider: query.provider, limit: query.limit)
                return .admin(200, .object([.init("subscriptions", .array(list.map(\.json)))]))
            },
            AdminEndpoint("GET", "/v1/subscriptions/{id}", .merchant) { _, path, _ in
                .admin(200, try await subscriptions.detail(id: try AdminRequest.pathID(path[0], of: "subscription")).json)
            },
        ] + Self.actions.sorted().map { verb in
            AdminEndpoint("POST", "/v1/subscriptions/{id}/\(verb)", .merchant) { request, path, caller in
                try await act(request, path[0], caller, verb)
            }
        }
    }

    static func listQuery(_ query: String) throws(OperationsError) -> (status: Subscription.Status?, provider: String?, limit: Int) {
        var result: (status: Subscription.Status?, provider: String?, limit: Int) = (nil, nil, 100)
        for (name, value) in AdminRequest.queryPairs(query) {
            switch name {
            case "status":
                guard let status = Subscription.Status(rawValue: value) else {
                    throw .invalid("status", "status must be one of \(Subscription.Status.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                result.status = status
            case "provider": result.provider = value
            case "limit": result.limit = try AdminRequest.limit(value)
            default:
                throw .invalid(name, "unknown query parameter \(name); known: status, provider, limit")
            }
        }
        return result
    }
}
