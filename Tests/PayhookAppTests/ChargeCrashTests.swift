import Foundation
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// The built `payhook serve` charging through the emulator, killed with SIGKILL after the
/// provider executed a charge and before payhook recorded the answer.
@Suite("Recurring charges survive kill -9", .timeLimit(.minutes(5)))
struct ChargeCrashTests {
    static func environment(_ database: TestDatabase, _ emulator: ProviderEmulator) -> [String: String] {
        let credentials = emulator.configuration
        return [
            "DATABASE_URL": database.url,
            "PAYHOOK_JOB_LEASE_SECONDS": "2",
            "PAYHOOK_SCHEDULER_INTERVAL_SECONDS": "1",
            "PAYHOOK_MERCADOPAGO_BASE_URL": emulator.baseURL(for: .mercadopago).absoluteString,
            "PAYHOOK_MERCADOPAGO_ACCESS_TOKEN": credentials.mercadoPagoAccessToken,
            "PAYHOOK_ADYEN_BASE_URL": emulator.baseURL(for: .adyen).absoluteString,
            "PAYHOOK_ADYEN_API_KEY": credentials.adyenAPIKey,
            "PAYHOOK_ADYEN_MERCHANT_ACCOUNT": credentials.adyenMerchantAccount,
            "PAYHOOK_PXP_BASE_URL": emulator.baseURL(for: .pxp).absoluteString,
            "PAYHOOK_PXP_CLIENT_ID": credentials.pxpClientID, "PAYHOOK_PXP_TOKEN_ID": credentials.pxpTokenID,
            "PAYHOOK_PXP_TOKEN_VALUE": credentials.pxpTokenValue, "PAYHOOK_PXP_MERCHANT": credentials.pxpMerchant,
            "PAYHOOK_PXP_SITE": credentials.pxpSite,
        ]
    }

    @Test("kill -9 between the provider call and the database update: after a restart, exactly one charge",
          arguments: ProviderID.allCases)
    func killedMidCharge(provider: ProviderID) async throws {
        let database = try await TestDatabase.migrated("charge_kill9_\(provider.rawValue)")
        let emulator = try ProviderEmulator()
        try emulator.start()
        defer { emulator.stop() }
        // The provider executes at once and answers after 3 s: the window for the kill.
        emulator.setChargeLatency(.seconds(3))
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        defer { Task { await pool.close() } }
        let currency = provider == .mercadopago ? "BRL" : "EUR"
        try await pool.query("""
            INSERT INTO vault_tokens (provider, token, shopper_reference, customer_id) VALUES ($1, 'tok-kill9', 'shopper-1', 'customer-1')
            """, [.text(provider.rawValue)])
        try await pool.query("""
            INSERT INTO subscriptions (vault_token_id, reference, amount_minor, currency, interval, start_at, next_charge_at)
            SELECT id, 'sub-kill9', 1999, $1, '{"every": 1, "unit": "month"}', now(), now() FROM vault_tokens
            """, [.text(currency)])
        var environment = TestSecrets.environment.merging(Self.environment(database, emulator)) { $1 }
        environment["PAYHOOK_LOG_LEVEL"] = "info"
        let binary = try PayhookBinary.path()

        let first = try ChildProcess.launch([binary, "serve", "--roles", "scheduler,worker"], environment: environment)
        defer { first.removeOutputFiles() }
        // The child's startup is included; as PayhookBinary.serve, it gets time for a slow CI machine.
        let executed = await eventually(timeout: PayhookBinary.startupWindow) { emulator.totalExecutedCharges == 1 }
        first.send(signal: SIGKILL)
        _ = await first.wait(timeout: .seconds(10))
        let afterKill = try await pool.query("SELECT status, attempted_at IS NOT NULL AS attempted FROM charges").rows
        #expect(executed, "the provider never executed the charge; stderr: \(first.standardError.suffix(500))")
        #expect(afterKill.count == 1)
        #expect(try afterKill.first?.decode("status", as: String.self) == "pending")
        #expect(try afterKill.first?.decode("attempted", as: Bool.self) == true)

        emulator.setChargeLatency(nil)
        let second = try ChildProcess.launch([binary, "serve", "--roles", "scheduler,worker"], environment: environment)
        defer { second.removeOutputFiles() }
        let settled = await eventually(timeout: .seconds(60)) {
            (try? await pool.query("SELECT count(*) AS n FROM charges WHERE status = 'succeeded'").rows.first?.decode("n", as: Int64.self)) == 1
        }
        second.send(signal: SIGTERM)
        let ended = await second.wait(timeout: .seconds(30))

        #expect(settled, "the charge was not settled after the restart; stderr: \(second.standardError.suffix(1000))")
        #expect(emulator.totalExecutedCharges == 1, "the provider executed the charge \(emulator.totalExecutedCharges) times")
        #expect(try await pool.query("SELECT count(*) AS n FROM charges").rows.first?.decode("n", as: Int64.self) == 1)
        #expect(try await pool.query("SELECT count(*) AS n FROM jobs WHERE state = 'running'").rows.first?.decode("n", as: Int64.self) == 0)
        #expect(ended == .exited(0))
    }
}
