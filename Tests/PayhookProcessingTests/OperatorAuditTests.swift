import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookPostgres
import Testing
@testable import PayhookAdmin
@testable import PayhookProcessing

/// What changes money is on record with who did it.
@Suite("Operator audit", .timeLimit(.minutes(5)))
struct OperatorAuditTests {
    @Test("registering an order is audited with its actor and values; repeating the same registration writes nothing more")
    func orderRegistrationAudited() async throws {
        let harness = try await FulfillmentHarness.make("audit_order_register")
        defer { harness.endpoint.stop() }
        let service = OrderService(pool: harness.pool, trigger: FulfillmentTrigger(queue: harness.queue(), settings: harness.settings))
        let registration = try OrderRegistration.parse(Array(FulfillmentTests.registration("order-audit").utf8))
        let order = try await service.register(registration, by: OperatorAction(actor: "shop-backend")).order
        _ = try await service.register(registration, by: OperatorAction(actor: "shop-backend"))
        let rows = try await harness.pool.query("SELECT actor, action, target, details::text AS details FROM audit_log").rows
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        #expect(try row.decode("actor", as: String.self) == "shop-backend")
        #expect(try row.decode("action", as: String.self) == "order.register")
        #expect(try row.decode("target", as: String.self) == "order:\(order.id)")
        #expect(try row.decode("details", as: String.self).contains("order-audit"))
    }
}
