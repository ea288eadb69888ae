import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
import Testing

/// Provider fetches run outside any transaction (docs/decisions/0011): a platform's
/// `idle_in_transaction_session_timeout` (or PostgreSQL 17's `transaction_timeout`, or a
/// pooler's transaction timeout) shorter than a slow fetch costs no event an attempt.
@Suite("Processing: provider fetches outside the transaction", .timeLimit(.minutes(5)))
struct ProcessingFetchLeaseTests {
    /// A provider API that answers after `delay`.
    final class SlowClient: PaymentProviderClient, Sendable {
        let inner: FakeProviderClient
        let delay: Duration
        var provider: ProviderID { inner.provider }

        init(_ inner: FakeProviderClient, delay: Duration) {
            self.inner = inner
            self.delay = delay
        }

        func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
            try? await Task.sleep(for: delay)
            return try await inner.fetchOrder(id: id)
        }

        func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
            try? await Task.sleep(for: delay)
            return try await inner.fetchPayment(id: id)
        }

        func charge(storedCredential: StoredCredential, amount: Money, reference: String,
                    idempotencyKey: String) async throws(ProviderAPIError) -> ChargeResult {
            try await inner.charge(storedCredential: storedCredential, amount: amount, reference: reference, idempotencyKey: idempotencyKey)
        }

        func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup {
            try await inner.lookUpCharge(idempotencyKey: idempotencyKey, providerPaymentID: providerPaymentID)
        }
    }

    @Test("a fetch slower than idle_in_transaction_session_timeout: the batch is processed, no attempt is charged")
    func slowFetchUnderIdleTimeout() async throws {
        let harness = try await ProcessingHarness.make("fetch_lease")
        try #require(harness.database.url.contains("options=-csearch_path%3D"), "the test builds on ops/test's URI form")
        // Every session of this pool ends any transaction left idle for 300 ms.
        let strict = PostgresPool(conninfo: harness.database.url.replacingOccurrences(
            of: "options=-csearch_path%3D", with: "options=-cidle_in_transaction_session_timeout%3D300%20-csearch_path%3D"),
            maxConnections: 4)
        harness.pxp.setPayment(NormalizationPXPTests.fetched("SLOW", "Captured", .captured))
        let pxpID = try await harness.insert(.pxp, Bodies.pxpTransaction("SLOW", state: "Captured"))
        let adyenID = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "ADY-SLOW", code: "AUTHORISATION", value: 1000)))

        var settings = ProcessorSettings()
        settings.maxAttempts = 2
        let clock = harness.clock
        let processor = InboundEventProcessor(
            pool: strict, conninfo: harness.database.url,
            clients: PaymentProviderClients([SlowClient(harness.pxp, delay: .milliseconds(900)), harness.mercadoPago]),
            hooks: .fulfillment(FulfillmentSettings(), pool: strict).then(.subscriptions), settings: settings, logger: .silent, now: { clock.now }, jitter: { 0.5 })

        let outcome = try await processor.processBatch()
        #expect(outcome == BatchOutcome(claimed: 2, processed: 2, retried: 0, dead: 0))
        let pxp = try await harness.inbound(pxpID)
        #expect(pxp.status == "processed" && pxp.attempts == 1, "\(pxp)")
        let adyen = try await harness.inbound(adyenID)
        #expect(adyen.status == "processed" && adyen.attempts == 1, "\(adyen)")
        #expect(try await harness.payment(.pxp, "SLOW")?.status == "captured")
        await strict.close()
    }

    @Test("an event whose lease ran out and was claimed again is left to the new claim, not applied twice")
    func expiredLeaseIsSkipped() async throws {
        let harness = try await ProcessingHarness.make("fetch_lease_lost")
        harness.pxp.setPayment(NormalizationPXPTests.fetched("LOST", "Captured", .captured))
        let id = try await harness.insert(.pxp, Bodies.pxpTransaction("LOST", state: "Captured"))
        // While the first processor fetches, its lease is overwritten, as another processor's
        // claim would after the lease ran out.
        final class StealingClient: PaymentProviderClient, Sendable {
            let inner: FakeProviderClient
            let steal: @Sendable () async -> Void
            var provider: ProviderID { inner.provider }
            init(_ inner: FakeProviderClient, steal: @escaping @Sendable () async -> Void) {
                self.inner = inner
                self.steal = steal
            }
            func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot { try await inner.fetchOrder(id: id) }
            func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
                await steal()
                return try await inner.fetchPayment(id: id)
            }
            func charge(storedCredential: StoredCredential, amount: Money, reference: String,
                        idempotencyKey: String) async throws(ProviderAPIError) -> ChargeResult {
                try await inner.charge(storedCredential: storedCredential, amount: amount, reference: reference, idempotencyKey: idempotencyKey)
            }
            func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup {
                try await inner.lookUpCharge(idempotencyKey: idempotencyKey, providerPaymentID: providerPaymentID)
            }
        }
        let pool = harness.pool
        let client = StealingClient(harness.pxp) {
            _ = try? await pool.query("UPDATE inbound_events SET next_attempt_at = next_attempt_at + interval '1 minute' WHERE id = $1", [.int(id)])
        }
        let clock = harness.clock
        let processor = InboundEventProcessor(
            pool: harness.pool, conninfo: harness.database.url, clients: PaymentProviderClients([client, harness.mercadoPago]),
            hooks: .fulfillment(FulfillmentSettings(), pool: harness.pool).then(.subscriptions), settings: ProcessorSettings(), logger: .silent, now: { clock.now }, jitter: { 0.5 })

        let outcome = try await processor.processBatch()
        #expect(outcome == BatchOutcome(claimed: 1, processed: 0, retried: 0, dead: 0))
        let row = try await harness.inbound(id)
        #expect(row.status == "pending" && row.attempts == 0, "\(row)")
        #expect(try await harness.payment(.pxp, "LOST") == nil)
    }
}
