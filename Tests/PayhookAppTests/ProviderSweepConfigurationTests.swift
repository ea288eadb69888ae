import Testing
@testable import PayhookApp
@testable import PayhookProcessing
@testable import PayhookCore

extension ConfigurationTests {
    @Test("the provider sweep's settings: documented defaults, each read from its variable, 0 turns it off, bad values named")
    func providerSweep() throws {
        let defaults = try parse([:]).sweep
        #expect(defaults.interval == .seconds(300))
        #expect(defaults.orderDeadline == .seconds(86_400))
        #expect(defaults.pendingAfter == .seconds(3_600))
        #expect(defaults.authorizationLifetime == .seconds(7 * 86_400))
        #expect(defaults.recheck == .seconds(6 * 3_600))
        #expect(defaults.notifyOrderExpired == false)
        // A charge is swept once its own re-checks are used up: 900 s × 96 by default.
        #expect(defaults.chargePendingAfter == .seconds(900 * 96))

        let set = try parse([
            "PAYHOOK_SWEEP_INTERVAL_SECONDS": "60", "PAYHOOK_SWEEP_ORDER_DEADLINE": "2h",
            "PAYHOOK_SWEEP_PENDING_AFTER": "30m", "PAYHOOK_SWEEP_AUTHORIZATION_LIFETIME": "28d",
            "PAYHOOK_SWEEP_RECHECK": "1h", "PAYHOOK_SWEEP_BATCH": "50", "PAYHOOK_CALLBACK_ORDER_EXPIRED": "true",
            "PAYHOOK_CHARGE_PENDING_RECHECK_SECONDS": "60", "PAYHOOK_CHARGE_PENDING_CHECKS": "10",
        ]).sweep
        #expect(set.interval == .seconds(60))
        #expect(set.orderDeadline == .seconds(7_200))
        #expect(set.pendingAfter == .seconds(1_800))
        #expect(set.authorizationLifetime == .seconds(28 * 86_400))
        #expect(set.recheck == .seconds(3_600))
        #expect(set.batchSize == 50)
        #expect(set.notifyOrderExpired)
        #expect(set.chargePendingAfter == .seconds(600))

        #expect(try parse(["PAYHOOK_SWEEP_INTERVAL_SECONDS": "0"]).sweep.interval == nil)
        let error = #expect(throws: ConfigurationError.self) {
            try parse(["PAYHOOK_SWEEP_ORDER_DEADLINE": "soon", "PAYHOOK_SWEEP_RECHECK": "-1h",
                       "PAYHOOK_CALLBACK_ORDER_EXPIRED": "maybe"])
        }
        #expect(Set(error?.problems.map(\.variable) ?? []) == [
            "PAYHOOK_SWEEP_ORDER_DEADLINE", "PAYHOOK_SWEEP_RECHECK", "PAYHOOK_CALLBACK_ORDER_EXPIRED",
        ])
    }
}
