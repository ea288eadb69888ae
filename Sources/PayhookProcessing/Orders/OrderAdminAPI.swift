import Foundation
import PayhookHTTP
package import PayhookAdmin

/// The admin listener's `/v1/orders` routes: `POST /v1/orders` registers the merchant's
/// expected order (201, or 200 when the same registration is repeated) and
/// `GET /v1/orders/{id}` returns its state with payments and fulfillment. Authorization happens
/// before this is called; errors have the shape of every admin route
/// (`{"code", "message", "field"}`). docs/admin-api.openapi.json describes both.
package struct OrderAdminAPI: AdminRoutes {
    let service: OrderService

    package let prefix = "/v1/orders"

    package init(service: OrderService) {
        self.service = service
    }

    package var endpoints: [AdminEndpoint] {
        let service = service
        return [
            AdminEndpoint("POST", "/v1/orders", .merchant) { request, _, caller in
                if let type = request.header("content-type"), !type.lowercased().hasPrefix("application/json") {
                    return OperationsError.invalid("Content-Type", "send the body as application/json").httpResponse
                }
                let registration = try OrderRegistration.parse(request.body)
                let action = caller.action(request)
                let (order, created) = try await service.register(registration, by: action)
                return .admin(created ? 201 : 200, order.json)
            },
            AdminEndpoint("GET", "/v1/orders/{id}", .merchant) { _, path, _ in
                let id = try AdminRequest.pathID(path[0], of: "order")
                return .admin(200, try await service.order(id: id).json)
            },
        ]
    }
}
