import Foundation
import PayhookCore
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Synchronization
import Testing

@Suite("Health, readiness and metrics", .timeLimit(.minutes(5)))
struct HealthAndMetricsTests {
    @Test("/healthz is 200 and /readyz is 200 on a migrated schema, on both listeners")
    func healthyAndReady() async throws {
        try await IngressHarness.with("health_ready") { (ingress) async throws in
            #expect(try await ingress.get("/healthz").status == 200)
            #expect(try await ingress.get("/readyz").status == 200)
            #expect(try await ingress.get("/healthz", admin: true).status == 200)
            #expect(try await ingress.get("/readyz", admin: true).status == 200)
        }
    }

    @Test("/readyz is 503 on a schema with no migrations applied, while /healthz stays 200")
    func notReadyWithoutMigrations() async throws {
        let empty = try await TestDatabase.empty("health_unmigrated")
        try await IngressHarness.with("health_unmigrated", database: empty) { (ingress) async throws in
            let ready = try await ingress.get("/readyz")
            #expect(ready.status == 503, "\(ready)")
            #expect(ready.text.contains("migration"), "\(ready)")
            #expect(try await ingress.get("/healthz").status == 200)
        }
    }

    @Test("/metrics on the admin listener needs the bearer token")
    func metricsNeedToken() async throws {
        try await IngressHarness.with("metrics_auth") { (ingress) async throws in
            #expect(try await ingress.get("/metrics", admin: true).status == 401)
            #expect(try await ingress.get("/metrics", admin: true, headers: [("Authorization", "Bearer wrong-token")]).status == 401)
            let scraped = try await ingress.get("/metrics", admin: true, headers: [("Authorization", "Bearer \(TestSecrets.adminToken)")])
            #expect(scraped.status == 200)
            #expect(scraped.text.contains("# TYPE payhook_deliveries_accepted_total counter"))
            // Not served on the public ingress listener.
            #expect(try await ingress.get("/metrics", headers: [("Authorization", "Bearer \(TestSecrets.adminToken)")]).status == 404)
        }
    }

    @Test("the accepted, duplicate and rejected counters follow the deliveries")
    func countersMove() async throws {
        try await IngressHarness.with("metrics_counters") { (ingress) async throws in
            let auth = [("Authorization", "Bearer \(TestSecrets.adminToken)")]
            func scrape() async throws -> String { try await ingress.get("/metrics", admin: true, headers: auth).text }

            let first = Sign.pxp()
            #expect(try await ingress.post(first).status == 200)
            #expect(try await ingress.post(Sign.pxp()).status == 200)
            #expect(try await ingress.post(first).status == 200)
            #expect(try await ingress.post(Sign.pxp(key: "forger")).status == 401)
            #expect(try await ingress.post(Sign.adyen()).status == 200)

            let text = try await scrape()
            #expect(metricValue(text, "payhook_deliveries_accepted_total", "provider=\"pxp\"") == 2, "\(text)")
            #expect(metricValue(text, "payhook_deliveries_duplicate_total", "provider=\"pxp\"") == 1)
            #expect(metricValue(text, "payhook_deliveries_rejected_total", "provider=\"pxp\",reason=\"signature_mismatch\"") == 1)
            #expect(metricValue(text, "payhook_deliveries_accepted_total", "provider=\"adyen\"") == 1)
            #expect((metricValue(text, "payhook_deliveries_accepted_total", "provider=\"mercadopago\"") ?? 0) == 0)
        }
    }

    @Test("repeated stale-timestamp deliveries are each accepted and counted, but logged about once a second")
    func staleTimestampWarningsAreCountedNotFlooded() async throws {
        let lines = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .warning) { line in lines.withLock { $0.append(line) } }
        try await IngressHarness.with("metrics_stale_warnings", overrides: ["PAYHOOK_MERCADOPAGO_STALE_TS": "warn"], logger: logger) {
            (ingress) async throws in
            // An hour-old ts, as a provider retrying (or an operator replaying) old deliveries sends it.
            let stale = Sign.mercadoPago(ts: String((Int(Date().timeIntervalSince1970) - 3600) * 1000))
            let started = ContinuousClock.now
            for _ in 0..<20 {
                #expect(try await ingress.post(stale).status == 200)
            }
            let elapsed = ContinuousClock.now - started

            let auth = [("Authorization", "Bearer \(TestSecrets.adminToken)")]
            let text = try await ingress.get("/metrics", admin: true, headers: auth).text
            #expect(metricValue(text, "payhook_signature_warnings_total", "provider=\"mercadopago\",warning=\"stale_timestamp\"") == 20)
            let warned = lines.withLock { $0 }.filter { $0.contains("verified delivery with a warning") }
            // One line, plus at most one per further second the 20 requests took.
            #expect(!warned.isEmpty)
            #expect(warned.count <= 1 + Int(elapsed.components.seconds), "\(warned.count) lines in \(elapsed)")
            #expect(warned.first?.contains("\"suppressed\":0") == true)
        }
    }
}
