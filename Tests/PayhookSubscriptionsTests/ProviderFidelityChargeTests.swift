import Foundation
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// What each provider's reference says a merchant-initiated charge must carry, checked end to
/// end: scheduler, charge jobs, the real clients, and the emulator, which refuses a request the
/// real API would refuse and records the fields that tell the charges apart.
@Suite("Provider fidelity of recurring charges", .timeLimit(.minutes(5)))
struct ProviderFidelityChargeTests {
    /// `MerchantInitiatedInitialRecurring` is PXP's setup transaction that saves the card
    /// (https://developer.pxp.io/guides/transactions/e-commerce/recurring-payments), which
    /// payhook never makes: the card was saved before payhook charges it.
    @Test("PXP: every scheduled charge, the first included, is MerchantInitiatedSubsequentRecurring; a retry after a soft decline MerchantInitiatedResubmission")
    func pxpProcessingModels() async throws {
        let harness = try await SubscriptionHarness.make("fidelity_pxp_models")
        defer { harness.stop() }
        harness.emulator.script(.pxp, [.declined(code: ProviderID.pxp.softDeclineCode), .approved, .approved])
        let id = try await harness.subscribe(token: try await harness.seedToken(.pxp))
        let scheduler = harness.scheduler()
        let handler = harness.handler()
        try await scheduler.tick(now: harness.clock.now)
        try await harness.runChargeJobs(handler)
        harness.clock.advance(by: 86_400)
        try await harness.runChargeJobs(handler)
        harness.clock.advance(by: 31 * 86_400)
        try await scheduler.tick(now: harness.clock.now)
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:declined_soft", "1/2:succeeded", "2/1:succeeded"])
        #expect(harness.emulator.executed(.pxp).map { $0.requestFields["recurring.processingModel"] } == [
            "MerchantInitiatedSubsequentRecurring", "MerchantInitiatedResubmission", "MerchantInitiatedSubsequentRecurring",
        ])
    }

    @Test("PXP: a charge whose outcome is unknown is never re-sent on a 404 from the lookup, even after PXP forgot the key")
    func pxpLookupNotFoundIsNoResend() async throws {
        // The client's deadline is generous for a loaded machine; the emulated stall is longer still.
        let harness = try await SubscriptionHarness.make("fidelity_pxp_404", clientTimeout: .seconds(3))
        defer { harness.stop() }
        harness.emulator.failCharges(.pxp, with: .timeout(after: .seconds(8)))
        let id = try await harness.subscribe(token: try await harness.seedToken(.pxp))
        try await harness.scheduler().tick(now: harness.clock.now)
        let handler = harness.handler()
        try await harness.runChargeJobs(handler, rounds: 1)
        #expect(try await harness.chargeSummary(id) == ["1/1:unknown"])
        #expect(harness.emulator.pxp.callCount(.createTransaction) == 1)

        // PXP no longer recognizes the id as a replay, and the lookup answers 404 twice: read
        // as "never charged", that would charge the shopper a second time.
        harness.emulator.pxp.forgetIdempotencyKeys()
        harness.emulator.pxp.fail(next: 2, with: .notFound, on: .findTransactions)
        try await harness.runChargeJobs(handler, rounds: 2)
        #expect(try await harness.chargeSummary(id) == ["1/1:unknown"])
        #expect(harness.emulator.pxp.callCount(.createTransaction) == 1)

        // A lookup that answers finds the charge that did execute, and settles it.
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.pxp.totalExecutedCharges == 1)
        #expect(harness.emulator.pxp.callCount(.createTransaction) == 1)
    }

    @Test("Mercado Pago: charges go out automatic_async, referencing the card's first payment, with the cycle's subscription_data")
    func mercadoPagoMerchantInitiated() async throws {
        let harness = try await SubscriptionHarness.make("fidelity_mp_mit")
        defer { harness.stop() }
        let token = try await harness.seedToken(.mercadopago)
        try await harness.pool.query("UPDATE vault_tokens SET first_payment_reference = 'PAY01JQ4S4KY8HWQ6NA5PXB65B3D4' WHERE id = $1",
                                     [.int(token)])
        let id = try await harness.subscribe(token: token, amount: 2500, currency: "BRL", maxCycles: 12, reference: "sub-fidelity")
        let scheduler = harness.scheduler()
        let handler = harness.handler()
        for _ in 1...2 {
            try await scheduler.tick(now: harness.clock.now)
            try await harness.runChargeJobs(handler)
            harness.clock.advance(by: 31 * 86_400)
        }
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded", "2/1:succeeded"])
        let sent = harness.emulator.executed(.mercadopago).map(\.requestFields)
        try #require(sent.count == 2)
        for (index, fields) in sent.enumerated() {
            #expect(fields["processing_mode"] == "automatic_async")
            #expect(fields["stored_credential.payment_initiator"] == "merchant")
            #expect(fields["stored_credential.first_payment"] == "false")
            // The first payment, every time: never the previous cycle's order id.
            #expect(fields["stored_credential.previous_transaction_reference"] == "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4")
            #expect(fields["payment_method.token"] == nil)
            #expect(fields["subscription_data.invoice_id"] == "sub-fidelity-c\(index + 1)")
            #expect(fields["subscription_data.subscription_sequence.number"] == "\(index + 1)")
            #expect(fields["subscription_data.subscription_sequence.total"] == "12")
            #expect(fields["subscription_data.invoice_period.type"] == "monthly")
            #expect(fields["subscription_data.invoice_period.period"] == "1")
        }
        #expect(sent.map { $0["subscription_data.billing_date"] } == ["2030-01-01", "2030-02-01"])
    }

    @Test("Mercado Pago: a pending charge is rechecked with GET /v1/orders/{order id}, never GET /v1/payments")
    func mercadoPagoPendingRecheck() async throws {
        let harness = try await SubscriptionHarness.make("fidelity_mp_pending")
        defer { harness.stop() }
        harness.emulator.script(.mercadopago, [.pending])
        let id = try await harness.subscribe(token: try await harness.seedToken(.mercadopago), currency: "BRL")
        try await harness.scheduler().tick(now: harness.clock.now)
        let handler = harness.handler()
        try await harness.runChargeJobs(handler, rounds: 1)
        let pending = try #require(try await harness.charges(id).first)
        let orderID = try #require(pending.providerPaymentID)
        #expect(pending.status == "pending")

        // Mercado Pago settles the order; the recheck reads it from the orders endpoint.
        let processed = String(decoding: try #require(harness.emulator.mercadoPago.order(id: orderID)), as: UTF8.self)
            .replacingOccurrences(of: #""status":"processing""#, with: #""status":"processed""#)
        harness.emulator.mercadoPago.putOrder(id: orderID, json: processed)
        harness.clock.advance(by: 3600)
        try await harness.runChargeJobs(handler)
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        #expect(harness.emulator.mercadoPago.callCount(.order, id: orderID) >= 1)
        #expect(harness.emulator.mercadoPago.callCount(.payment) == 0)
    }
}
