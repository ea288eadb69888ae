import Foundation
import PayhookCore
import PayhookPostgres
import PayhookQueue
import PayhookTestSupport
import Testing
@testable import PayhookApp

/// Fulfillment off the happy path: callbacks that failed and are replayed, payments whose facts
/// arrive in any order, reversals after `order.paid`, a refund racing the fulfillment job, and
/// merchant accounts that share references.
@Suite("Fulfillment edges: replays, reordering, reversals, accounts", .timeLimit(.minutes(5)))
struct FulfillmentEdgeTests {
    private func openLetter(_ harness: FulfillmentHarness, reason: String) async throws -> Int64 {
        try #require(try await harness.pool.query(
            "SELECT id FROM dead_letters WHERE status = 'open' AND reason = $1 ORDER BY id DESC LIMIT 1", [.text(reason)])
            .rows.first?.decode("id", as: Int64.self))
    }

    @Test("an order.paid callback dead-lettered by a 410 is delivered again on replay, with the same webhook-id and body, and fulfills the order")
    func goneThenReplayed() async throws {
        let harness = try await FulfillmentHarness.make("edge_gone_replay")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([410, 200])
        let order = try await harness.register(FulfillmentTests.registration("order-31"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP31", reference: "order-31", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "failed"))
        let letter = try await openLetter(harness, reason: "merchant_gone")

        let replay = try await DeadLetterOperations(pool: harness.pool).replay(id: letter, by: OperatorAction(actor: "oncall"))
        #expect(replay.changed)
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        let received = harness.endpoint.received
        #expect(received.count == 2)
        #expect(Set(received.compactMap { $0.header("webhook-id") }) == ["order.paid.\(order.id)"])
        #expect(received[0].body == received[1].body)
        #expect(try await harness.order(order.id).callbacks.map(\.status) == ["delivered"])

        // Replaying a delivered callback's job again sends nothing more.
        try await harness.pool.query("UPDATE jobs SET state = 'available', attempt = 0, run_at = now() WHERE kind = 'merchant_callback'")
        _ = try await harness.runWorker(until: order.id, reaches: "fulfilled", settle: .milliseconds(500))
        #expect(harness.endpoint.received.count == 2)
    }

    @Test("an order.paid callback whose last attempt fails marks the order's fulfillment failed, and a replay later fulfills it")
    func lastAttemptFailsThenReplayed() async throws {
        let harness = try await FulfillmentHarness.make("edge_last_attempt")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([500, 503, 200])
        let order = try await harness.register(FulfillmentTests.registration("order-32"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP32", reference: "order-32", value: 1999),
                                  processor: harness.processor())
        // Fulfill first, so the callback job exists, then give it two attempts in all.
        let queue = harness.queue()
        let fulfill = FulfillOrderHandler(pool: harness.pool, queue: queue, settings: harness.settings, metrics: harness.metrics,
                                          logger: .silent)
        let jobs = try await queue.claim(limit: 10, kinds: [FulfillOrderHandler.kind], worker: "t", lease: .seconds(60))
        for job in jobs { try await queue.record(try await fulfill.run(job), for: job) }
        try await harness.pool.query("UPDATE jobs SET max_attempts = 2 WHERE kind = 'merchant_callback'")

        #expect(try await harness.runWorker(until: order.id, reaches: "failed"))
        let failed = try await harness.order(order.id)
        #expect(failed.callbacks.map(\.status) == ["failed"])
        #expect(failed.reviewReason?.contains("order.paid callback failed") == true, "\(failed.reviewReason ?? "")")
        let letter = try await openLetter(harness, reason: "max_attempts_exceeded")

        _ = try await DeadLetterOperations(pool: harness.pool).replay(id: letter, by: OperatorAction(actor: "oncall"))
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        #expect(harness.endpoint.received.count == 3)
        #expect(try await harness.order(order.id).callbacks.map(\.status) == ["delivered"])
    }
}
