import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// The batched statements of `charge_recurring`: first attempts marked together, successes
/// settled together, and the one-by-one path taking over whatever a batch must not decide.
@Suite("Charge batching", .timeLimit(.minutes(5)))
struct ChargeBatchingTests {
    /// One due first attempt per provider, scheduled; returns their keys (as stored) by provider.
    private func scheduleOnePerProvider(_ harness: SubscriptionHarness) async throws -> [ProviderID: (subscription: Int64, key: String)] {
        var subscriptions: [ProviderID: Int64] = [:]
        for provider in ProviderID.allCases {
            let token = try await harness.seedToken(provider)
            subscriptions[provider] = try await harness.subscribe(token: token, currency: "BRL")
        }
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 3)
        var due: [ProviderID: (Int64, String)] = [:]
        for (provider, id) in subscriptions { due[provider] = (id, try await harness.key(id, cycle: 1)) }
        return due
    }

    @Test("first attempts are loaded and marked in one statement; paused, attempted and unknown keys are left to the one-by-one path")
    func beginFirstAttempts() async throws {
        let harness = try await SubscriptionHarness.make("batch_begin", emulator: false)
        defer { harness.stop() }
        let due = try await scheduleOnePerProvider(harness)
        let adyen = try #require(due[.adyen]), pxp = try #require(due[.pxp]), mercadoPago = try #require(due[.mercadopago])
        try await harness.pool.query("UPDATE subscriptions SET status = 'paused' WHERE id = $1", [.int(pxp.subscription)])

        let keys = [adyen.key, pxp.key, "sub-0-c1-a1", mercadoPago.key]
        let first = await ChargeRecurringHandler.beginFirstAttempts(keys, at: harness.clock.now, pool: harness.pool)
        #expect(first.map { $0?.charge.idempotencyKey } == [adyen.key, nil, nil, mercadoPago.key])
        #expect(first[0]?.provider == "adyen" && first[0]?.token.status == "active" && first[0]?.charge.attemptedAt != nil)
        #expect(first[3]?.provider == "mercadopago" && first[3]?.charge.calls == 1)

        // Only the returned ones were marked: the paused one was never sent, so it can still be skipped.
        let marked = try await harness.pool.query(
            "SELECT idempotency_key FROM charges WHERE attempted_at IS NOT NULL ORDER BY idempotency_key").rows
            .map { try $0.decode("idempotency_key", as: String.self) }
        #expect(marked == [adyen.key, mercadoPago.key].sorted())

        // A second run of the same keys is no first attempt any more: the one-by-one path decides.
        let again = await ChargeRecurringHandler.beginFirstAttempts(keys, at: harness.clock.now, pool: harness.pool)
        #expect(again.allSatisfy { $0 == nil })
        #expect(try await harness.int("SELECT sum(calls) AS n FROM charges") == 2)
    }

    @Test("successes of several providers settle in one transaction, each linked to its payment or order; a settled one is not settled twice")
    func settleSuccesses() async throws {
        let harness = try await SubscriptionHarness.make("batch_settle", emulator: false)
        defer { harness.stop() }
        let due = try await scheduleOnePerProvider(harness)
        let loaded = await ChargeRecurringHandler.beginFirstAttempts(ProviderID.allCases.map { due[$0]!.key }, at: harness.clock.now, pool: harness.pool)
        let successes = try loaded.map { item in
            let loaded = try #require(item)
            let asOrder = loaded.provider == "mercadopago"
            return ChargeRecurringHandler.Success(
                chargeID: loaded.charge.id, provider: loaded.provider, providerPaymentID: "psp-\(loaded.charge.id)",
                merchantReference: asOrder ? nil : ChargeRecurringHandler.reference(loaded), providerStatus: "Authorised",
                status: "authorized", asOrder: asOrder)
        }
        #expect(await ChargeRecurringHandler.settleSuccesses(successes, pool: harness.pool) == [true, true, true])

        for success in successes {
            let row = try #require(try await harness.pool.query("""
                SELECT c.status, c.provider_payment_id, p.provider_payment_id AS payment, p.merchant_reference, p.amount_minor,
                       o.provider_order_id AS placed
                FROM charges c LEFT JOIN payments p ON p.id = c.payment_id LEFT JOIN orders o ON o.id = c.order_id
                WHERE c.id = $1
                """, [.int(success.chargeID)]).rows.first)
            #expect(try row.decode("status", as: String.self) == "succeeded")
            #expect(try row.decode("provider_payment_id", as: String?.self) == success.providerPaymentID)
            if success.asOrder {
                #expect(try row.decode("placed", as: String?.self) == success.providerPaymentID)
                #expect(try row.decode("payment", as: String?.self) == nil)
            } else {
                #expect(try row.decode("payment", as: String?.self) == success.providerPaymentID)
                #expect(try row.decode("merchant_reference", as: String?.self) == success.merchantReference)
                #expect(try row.decode("amount_minor", as: Int64?.self) == 1999)
            }
        }
        // A replayed settlement finds nothing left to settle and creates no second payment.
        #expect(await ChargeRecurringHandler.settleSuccesses(successes, pool: harness.pool) == [false, false, false])
        #expect(try await harness.int("SELECT count(*) AS n FROM payments") == 2)
        #expect(try await harness.int("SELECT count(*) AS n FROM orders") == 1)
    }

    @Test("a batch holding a second success of one cycle changes nothing; the job alone then keeps the evidence and dead-letters")
    func secondSuccessFailsTheBatchOnly() async throws {
        let harness = try await SubscriptionHarness.make("batch_duplicate_success")
        defer { harness.stop() }
        let due = try await scheduleOnePerProvider(harness)
        let adyen = try #require(due[.adyen]), pxp = try #require(due[.pxp])
        let handler = harness.handler()
        try await harness.runChargeJobs(handler)
        #expect(try await harness.int("SELECT count(*) AS n FROM charges WHERE status = 'succeeded'") == 3)

        // A second attempt of Adyen's cycle 1 that the provider also approves (what
        // charges_one_success_per_cycle exists for), beside a fresh, innocent cycle of PXP.
        try await harness.pool.query("""
            INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, reason, provider, scheduled_at)
            VALUES ($1, 1, 2, $2, 1999, 'BRL', 'resubmission', 'adyen', now()),
                   ($3, 2, 1, $4, 1999, 'BRL', 'recurring', 'pxp', now())
            """, [.int(adyen.subscription), .text(try await harness.key(adyen.subscription, cycle: 1, attempt: 2)),
                  .int(pxp.subscription), .text(try await harness.key(pxp.subscription, cycle: 2, attempt: 1))])
        let ids = try await harness.pool.query("SELECT id, provider FROM charges WHERE status = 'pending' ORDER BY provider").rows
        let duplicateID: Int64 = try ids[0].decode("id"), freshID: Int64 = try ids[1].decode("id")
        let batch = [
            ChargeRecurringHandler.Success(chargeID: duplicateID, provider: "adyen", providerPaymentID: "psp-dup", merchantReference: "r",
                                           providerStatus: "Authorised", status: "authorized", asOrder: false),
            ChargeRecurringHandler.Success(chargeID: freshID, provider: "pxp", providerPaymentID: "psp-fresh", merchantReference: "r2",
                                           providerStatus: "Authorised", status: "authorized", asOrder: false),
        ]
        #expect(await ChargeRecurringHandler.settleSuccesses(batch, pool: harness.pool) == [nil, nil])
        #expect(try await harness.int("SELECT count(*) AS n FROM charges WHERE status = 'pending'") == 2)
        #expect(try await harness.int("SELECT count(*) AS n FROM payments WHERE provider_payment_id IN ('psp-dup', 'psp-fresh')") == 0)

        // Through the handler, the duplicate is settled alone after its batch failed.
        try await harness.queue.enqueue(
            ChargeRecurringArgs(idempotencyKey: try await harness.key(adyen.subscription, cycle: 1, attempt: 2),
                                provider: "adyen", subscriptionID: adyen.subscription))
        let outcomes = try await harness.runChargeJobs(handler)
        guard case .discard(let reason, _)? = outcomes.first else {
            Issue.record("expected a dead letter, got \(outcomes)")
            return
        }
        #expect(reason == .duplicateSuccess)
        let evidence = try #require(try await harness.pool.query(
            "SELECT status, decline_code, provider_payment_id FROM charges WHERE id = $1", [.int(duplicateID)]).rows.first)
        #expect(try evidence.decode("status", as: String.self) == "unknown")
        #expect(try evidence.decode("decline_code", as: String?.self) == "duplicate_success")
        #expect(try evidence.decode("provider_payment_id", as: String?.self) != nil)
    }
}
