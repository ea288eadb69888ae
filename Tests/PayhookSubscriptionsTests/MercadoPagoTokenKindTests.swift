import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import Testing
@testable import PayhookProcessing
@testable import PayhookOperations
@testable import PayhookAdmin
@testable import PayhookSubscriptions

/// Mercado Pago names a saved card by its card id, but charges it through a payment profile
/// (`automatic_payments.payment_profile_id`): payhook charges only with what the API accepts
/// (docs/providers.md, "Card ids are not payment profiles").
@Suite("Mercado Pago card ids and payment profiles", .timeLimit(.minutes(5)))
struct MercadoPagoTokenKindTests {
    func seed(_ harness: SubscriptionHarness, token: String, kind: String?, profile: String?) async throws -> Int64 {
        let rows = try await harness.pool.query("""
            INSERT INTO vault_tokens (provider, token, customer_id, brand, status, token_kind, payment_profile_id)
            VALUES ('mercadopago', $1, 'customer-1234', 'master', 'active', $2, $3) RETURNING id
            """, [.text(token), kind.map(PostgresValue.text) ?? .null, profile.map(PostgresValue.text) ?? .null])
        return try #require(try rows.rows.first?.decode("id", as: Int64.self))
    }

    @Test("processing stores a card id's kind and the payment profile its order charged through; a profile alone is its own token")
    func processingStoresKind() async throws {
        let harness = try await ProcessingHarness.make("mp_kind_store")
        let order = """
            {"id":"ORDK1","status":"processed","status_detail":"accredited","country_code":"BRA","total_amount":"10.00",
             "last_updated_date":"2025-03-10T14:05:11.482Z","payer":{"customer_id":"cust-1"},
             "transactions":{"payments":[{"id":"PAYK1","amount":"10.00","status":"processed","status_detail":"accredited",
               "payment_method":{"id":"master","type":"credit_card","card_id":"5550001"},
               "automatic_payments":{"payment_profile_id":"0f3a8c21d9b54e67a1c2b3d4e5f60718"}}]}}
            """
        harness.mercadoPago.setOrder(try MercadoPagoOrderDecoder.decode(Array(order.utf8)))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORDK1", notification: 1))
        let profileOnly = order.replacingOccurrences(of: "ORDK1", with: "ORDK2").replacingOccurrences(of: "PAYK1", with: "PAYK2")
            .replacingOccurrences(of: #","card_id":"5550001""#, with: "")
            .replacingOccurrences(of: "0f3a8c21d9b54e67a1c2b3d4e5f60718", with: "7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f")
        harness.mercadoPago.setOrder(try MercadoPagoOrderDecoder.decode(Array(profileOnly.utf8)))
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORDK2", notification: 2))
        try await harness.drain(harness.processor())
        #expect(try await harness.text("SELECT token_kind || ' ' || payment_profile_id AS v FROM vault_tokens WHERE token = '5550001'")
                == "card_id 0f3a8c21d9b54e67a1c2b3d4e5f60718")
        #expect(try await harness.text("SELECT token_kind AS v FROM vault_tokens WHERE token = '7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f'")
                == "payment_profile")
    }

    @Test("a card id with its payment profile is charged through the profile")
    func chargedThroughProfile() async throws {
        let harness = try await SubscriptionHarness.make("mp_kind_profile")
        defer { harness.stop() }
        let token = try await seed(harness, token: "9120384756", kind: "card_id", profile: "PP01JQ4S4KY8")
        let id = try await harness.subscribe(token: token, amount: 2500, currency: "BRL")
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        let executed = try #require(harness.emulator.executed(.mercadopago).first)
        #expect(executed.requestFields["automatic_payments.payment_profile_id"] == "PP01JQ4S4KY8")
    }

    @Test("a subscription on a card id with no payment profile is refused with a clear error")
    func subscribingOnCardIDRefused() async throws {
        let harness = try await SubscriptionHarness.make("mp_kind_refused")
        defer { harness.stop() }
        let token = try await seed(harness, token: "9120384757", kind: "card_id", profile: nil)
        let error = await #expect(throws: OperationsError.self) {
            _ = try await harness.subscribe(token: token, amount: 2500, currency: "BRL")
        }
        #expect(error?.field == "vault_token_id")
        #expect(error?.message.contains("payment profile") == true)
    }

    @Test("a cycle due on a card id with no payment profile is skipped with subscription.charge_skipped, never sent")
    func cycleSkipped() async throws {
        let harness = try await SubscriptionHarness.make("mp_kind_skip")
        defer { harness.stop() }
        // Subscribed while the token was still of unknown kind, then learned to be a bare card id.
        let token = try await seed(harness, token: "9120384758", kind: nil, profile: nil)
        let id = try await harness.subscribe(token: token, amount: 2500, currency: "BRL")
        try await harness.pool.query("UPDATE vault_tokens SET token_kind = 'card_id' WHERE id = $1", [.int(token)])
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:skipped"])
        #expect(harness.emulator.executed(.mercadopago).isEmpty)
        let callbacks = try await harness.pool.query("SELECT type FROM merchant_callbacks WHERE subscription_id = $1", [.int(id)])
            .rows.map { try $0.decode("type", as: String.self) }
        #expect(callbacks == ["subscription.charge_skipped"])
        #expect(try await harness.text("SELECT last_error AS v FROM charges WHERE subscription_id = \(id)")?.contains("payment profile") == true)
    }
}
