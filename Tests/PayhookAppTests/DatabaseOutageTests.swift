import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// While the database is unreachable ingress answers 503 (the provider retries), never 2xx;
/// once it is back, the same process accepts again (DESIGN.md invariant 1).
/// Runs on a cluster of its own (port 54343): the shared test server is never stopped.
@Suite("Ingress during a database outage", .timeLimit(.minutes(5)))
struct DatabaseOutageTests {
    @Test("deliveries are answered 503 while PostgreSQL is down and 200 again after it restarts, without restarting payhook")
    func outageAndRecovery() async throws {
        let cluster = try await DedicatedCluster.start(port: 54343)
        try await cluster.whileRunning {
            _ = try await PostgresMigrator(conninfo: cluster.url, migrations: try SchemaMigrations.all()).migrate()
            let database = TestDatabase(schema: "public", url: cluster.url)
            try await IngressHarness.with("outage", database: database) { (ingress) async throws in
                let before = Sign.adyen()
                #expect(try await ingress.post(before).status == 200)

                try await cluster.stop()
                let refused = [Sign.adyen(), Sign.pxp(), Sign.mercadoPago(), Sign.adyen(), Sign.pxp()]
                for delivery in refused {
                    let response = await ingress.send(delivery)
                    #expect(response?.status == 503, "\(delivery.provider) during the outage: \(String(describing: response))")
                }
                let notReady = await eventually(timeout: .seconds(10)) { (try? await ingress.get("/readyz").status) == 503 }
                #expect(notReady, "/readyz kept reporting ready with the database down")

                try await cluster.restart()
                // The provider's retry of a refused delivery succeeds once the pool reconnects.
                var last: HTTPTestResponse?
                let recovered = await eventually(timeout: .seconds(20)) {
                    last = await ingress.send(refused[0])
                    if let last, last.status != 200 { #expect(last.status == 503, "\(last)") }
                    return last?.status == 200
                }
                try #require(recovered, "still not accepting after the restart: \(String(describing: last))")
                for delivery in refused.dropFirst() {
                    #expect(try await ingress.post(delivery).status == 200)
                }
                for delivery in [before] + refused {
                    #expect(try await database.inboundRows(dedupKey: delivery.expectedDedupKey).count == 1, "\(delivery.provider)")
                }
                let readyAgain = await eventually(timeout: .seconds(10)) { (try? await ingress.get("/readyz").status) == 200 }
                #expect(readyAgain)
            }
        }
    }
}
