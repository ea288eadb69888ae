import Foundation
import PayhookHTTP

/// The admin listener's `/v1/dead-letters` routes: JSON over the same `DeadLetterOperations`
/// the CLI uses. Authorization happens before this is called (`AdminAuthorization`).
///
/// Errors are `{"code": …, "message": …, "field": …}` with a stable `code`; bad input is 400 and
/// names the query parameter or body field at fault. Replay here executes (an HTTP client asks
/// explicitly); use `GET /v1/dead-letters/{id}` for what it would do.
struct DeadLetterAdminAPI: Sendable {
    let operations: DeadLetterOperations

    static let prefix = "/v1/dead-letters"

    /// Answers `request` when its path is under `/v1/dead-letters`; returns false otherwise.
    func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        guard request.path == Self.prefix || request.path.hasPrefix(Self.prefix + "/") else { return false }
        let segments = request.path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let route = Array(segments.map(String.init))
        let operations = self.operations
        Task {
            let response: HTTPResponse
            do {
                response = try await Self.route(request, route, operations)
            } catch {
                response = Self.failure(OperationsError.wrapping(error))
            }
            respond(response)
        }
        return true
    }

    private static func route(_ request: HTTPRequest, _ route: [String], _ operations: DeadLetterOperations) async throws -> HTTPResponse {
        switch (request.method, route.count) {
        case ("GET", 0):
            let letters = try await operations.list(try filter(query: request.rawQuery))
            return ok(.object([.init("dead_letters", .array(letters.map(\.json)))]))
        case ("GET", 1):
            return ok(try await operations.detail(id: try AdminRequest.pathID(route[0], of: "dead letter")).json)
        case ("POST", 2) where route[1] == "replay" || route[1] == "discard":
            let id = try AdminRequest.pathID(route[0], of: "dead letter")
            let body = try OperatorAction.parseBody(request.body)
            let action = OperatorAction(actor: body.actor ?? "admin-api", note: body.note, context: [
                .init("via", .string("admin_api")), .init("remote_addr", .string(request.remoteAddress)),
            ])
            let outcome = route[1] == "replay"
                ? try await operations.replay(id: id, by: action)
                : try await operations.discard(id: id, by: action)
            return ok(outcome.json)
        case (_, 0), (_, 1):
            return failure(status: 405, code: "method_not_allowed", "method \(request.method) is not allowed here")
        case (_, 2) where route[1] == "replay" || route[1] == "discard":
            return failure(status: 405, code: "method_not_allowed", "method \(request.method) is not allowed here")
        default:
            return failure(status: 404, code: "not_found", "no such admin route")
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

    private static func ok(_ document: JSONDocument) -> HTTPResponse {
        .json(200, Array(document.rendered.utf8))
    }

    static func failure(_ error: OperationsError) -> HTTPResponse {
        .json(error.httpStatus, Array(error.json.rendered.utf8))
    }

    private static func failure(status: Int, code: String, _ message: String) -> HTTPResponse {
        .json(status, Array(JSONDocument.object([.init("code", .string(code)), .init("message", .string(message))]).rendered.utf8))
    }
}
