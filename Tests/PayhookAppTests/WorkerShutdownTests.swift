import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// `payhook serve` with the worker role, stopped while merchant callbacks are in flight.
@Suite("Worker role shutdown", .timeLimit(.minutes(4)))
struct WorkerShutdownTests {
    @Test("SIGTERM while callbacks are in flight: they finish, no job is left running, exit 0")
    func sigtermLeavesNoRunningJob() async throws {
        let database = try await TestDatabase.empty("worker_sigterm")
        let endpoint = try MerchantEndpoint(delay: .milliseconds(1500))
        defer { endpoint.stop() }
        let (child, _) = try await PayhookBinary.serve(databaseURL: database.url, environment: [
            "PAYHOOK_FULFILLMENT_URL": endpoint.url, "PAYHOOK_FULFILLMENT_SECRET": FulfillmentHarness.secret,
        ])
        defer { child.removeOutputFiles() }
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        try await pool.transaction { connection in
            for n in 0..<40 {
                try await MerchantCallbackOutbox(queue: JobQueue(pool: pool)).enqueue(MerchantCallback(
                    webhookID: "test.callback.\(n)", type: "test.callback", data: .object([.init("n", .int(Int64(n)))]),
                    orderID: nil, subscriptionID: nil, url: nil, occurredAt: Date()), on: connection)
            }
        }
        let inFlight = await eventually(timeout: .seconds(30)) { !endpoint.received.isEmpty }
        child.send(signal: SIGTERM)
        let ended = await child.wait(timeout: .seconds(60))
        let running = try await pool.query("SELECT count(*) AS n FROM jobs WHERE state = 'running'").rows.first?.decode("n", as: Int64.self)
        let delivered = try await pool.query("SELECT count(*) AS n FROM merchant_callbacks WHERE status = 'delivered'").rows.first?.decode("n", as: Int64.self)
        await pool.close()

        #expect(inFlight, "no callback reached the merchant")
        #expect(ended == .exited(0), "payhook did not exit 0: \(String(describing: ended)); stderr: \(child.standardError.suffix(1000))")
        #expect(running == 0)
        // Callbacks that were in flight when the signal came were allowed to finish.
        #expect((delivered ?? 0) >= 1)
        #expect((delivered ?? 0) < 40)
    }
}
