import Foundation
import PayhookHTTP

/// The admin listener's `/v1/orders` routes: `POST /v1/orders` registers the merchant's
/// expected order (201, or 200 when the same registration is repeated) and
/// `GET /v1/orders/{id}` returns its state with payments and fulfillment. Authorization happens
/// before this is called; errors have the shape of every admin route
/// (`{"code", "message", "field"}`). docs/admin-api.openapi.json describes both.
struct OrderAdminAPI: Sendable {
    let service: OrderService

    static let prefix = "/v1/orders"

    /// Answers `request` when its path is under `/v1/orders`; returns false otherwise.
    func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        guard request.path == Self.prefix || request.path.hasPrefix(Self.prefix + "/") else { return false }
        let route = request.path.dropFirst(Self.prefix.count).split(separator: "/").map(String.init)
        let service = self.service
        Task {
            let response: HTTPResponse
            do {
                response = try await Self.route(request, route, service)
            } catch {
                response = DeadLetterAdminAPI.failure(OperationsError.wrapping(error))
            }
            respond(response)
        }
        return true
    }

    private static func route(_ request: HTTPRequest, _ route: [String], _ service: OrderService) async throws -> HTTPResponse {
        switch (request.method, route.count) {
        case ("POST", 0):
            if let type = request.header("content-type"), !type.lowercased().hasPrefix("application/json") {
                return DeadLetterAdminAPI.failure(.invalid("Content-Type", "send the body as application/json"))
            }
            let registration = try OrderRegistration.parse(request.body)
            let (order, created) = try await service.register(registration)
            return .json(created ? 201 : 200, Array(order.json.rendered.utf8))
        case ("GET", 1):
            let id = try AdminRequest.pathID(route[0], of: "order")
            return .json(200, Array(try await service.order(id: id).json.rendered.utf8))
        case (_, 0), (_, 1):
            return .json(405, Array(JSONDocument.object([
                .init("code", .string("method_not_allowed")),
                .init("message", .string("method \(request.method) is not allowed here")),
            ]).rendered.utf8))
        default:
            return .json(404, Array(JSONDocument.object([
                .init("code", .string("not_found")), .init("message", .string("no such admin route")),
            ]).rendered.utf8))
        }
    }
}
