import Foundation
import PayhookCore
import PayhookEmulator
import Testing
@testable import PayhookProviders

@Suite("Emulated idempotency keys expire")
struct IdempotencyExpiryTests {
    @Test("after forgetIdempotencyKeys the same key executes a new charge that shows in the ledger", arguments: ProviderID.allCases)
    func forgetting(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            let first = try await harness.charge(key: "charge-expiry")
            #expect(try await harness.charge(key: "charge-expiry") == first)
            #expect(harness.executed("charge-expiry") == 1)

            harness.emulator.forgetIdempotencyKeys()
            let second = try await harness.charge(key: "charge-expiry")
            #expect(second.providerPaymentID != first.providerPaymentID)
            #expect(harness.executed("charge-expiry") == 2)
            #expect(harness.ledger.map(\.idempotencyKey) == ["charge-expiry", "charge-expiry"])
            // The new charge is remembered again until the next expiry.
            #expect(try await harness.charge(key: "charge-expiry") == second)
            #expect(harness.totalExecuted == 2)
        }
    }

    @Test("a configured window of zero forgets every key at once", arguments: ProviderID.allCases)
    func zeroWindow(provider: ProviderID) async throws {
        try await withChargeHarness(provider, {
            $0.mercadoPagoIdempotencyWindow = .zero
            $0.adyenIdempotencyWindow = .zero
            $0.pxpIdempotencyWindow = .zero
        }) { harness async throws in
            _ = try await harness.charge(key: "charge-window")
            _ = try await harness.charge(key: "charge-window")
            #expect(harness.executed("charge-window") == 2)
        }
    }

    @Test("the default windows remember keys: Mercado Pago 24 hours, Adyen 7 days, PXP forever")
    func defaults() {
        let configuration = ProviderEmulator.Configuration()
        #expect(configuration.mercadoPagoIdempotencyWindow == .seconds(24 * 3600))
        #expect(configuration.adyenIdempotencyWindow == .seconds(7 * 24 * 3600))
        #expect(configuration.pxpIdempotencyWindow == nil)
    }
}
