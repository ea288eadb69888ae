import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing

@Suite("Processing: failures, retries, races and the run loop", .timeLimit(.minutes(5)))
struct ProcessingFailureTests {
    @Test("an unparseable body is retried with backoff, then dead-lettered as payload_invalid after the configured attempts")
    func unparseable() async throws {
        let harness = try await ProcessingHarness.make("fail_payload")
        let processor = harness.processor(maxAttempts: 3)
        let good = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "OK1", code: "AUTHORISATION", value: 100)))
        let bad = try await harness.insert(.adyen, "this is not json")
        let badPXP = try await harness.insert(.pxp, #"{"eventCategory":"Transaction","eventData":{"systemTransactionId":"X"}}"#)
        let first = try await harness.drain(processor)
        #expect(first.processed == 1 && first.retried == 2 && first.dead == 0)
        #expect(try await harness.inbound(good).status == "processed", "one bad event does not roll back the others")
        let waiting = try await harness.inbound(bad)
        #expect(waiting.status == "pending" && waiting.attempts == 1)
        #expect(waiting.nextAttemptAt > harness.clock.now, "the retry waits out its backoff")
        #expect(try await harness.drain(processor).claimed == 0, "nothing is due before the backoff ends")

        harness.clock.advance(by: 3600)
        #expect(try await harness.drain(processor).retried == 2)
        harness.clock.advance(by: 3600)
        #expect(try await harness.drain(processor).dead == 2)
        let dead = try await harness.inbound(bad)
        #expect(dead.status == "dead" && dead.attempts == 3)
        #expect(dead.lastError == "adyen payload is not a well-formed JSON object")
        #expect(try await harness.text("SELECT reason AS v FROM dead_letters WHERE source = 'inbound_event' AND source_id = $1", [.int(bad)]) == "payload_invalid")
        #expect(try await harness.text("SELECT error AS v FROM dead_letters WHERE source_id = $1", [.int(badPXP)])
                == "pxp payload is missing required field eventData.state")
    }

    @Test("an event whose writes fail in the database rolls back alone; the rest of its batch is processed once")
    func applyFailureRollsBackAlone() async throws {
        let harness = try await ProcessingHarness.make("fail_apply")
        // The batch is first applied behind one savepoint; this event's payment insert fails
        // there, and the batch must then be applied event by event as if that pass never ran.
        try await harness.pool.query("ALTER TABLE payments ADD CONSTRAINT test_poison CHECK (provider_payment_id <> 'POISON')")
        let before = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "A1", code: "AUTHORISATION", value: 100)))
        let poison = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "POISON", code: "AUTHORISATION", value: 100)))
        let after = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "A2", code: "AUTHORISATION", value: 100)))
        let processor = harness.processor()
        let outcome = try await processor.processBatch()
        #expect(outcome == BatchOutcome(claimed: 3, processed: 2, retried: 1, dead: 0))
        #expect(try await harness.inbound(before).status == "processed")
        #expect(try await harness.inbound(after).status == "processed")
        let failed = try await harness.inbound(poison)
        #expect(failed.status == "pending" && failed.attempts == 1 && failed.lastError != nil)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payments") == 2)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events") == 2)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events WHERE inbound_event_id = $1", [.int(before)]) == 1)

        try await harness.pool.query("ALTER TABLE payments DROP CONSTRAINT test_poison")
        harness.clock.advance(by: 3600)
        #expect(try await harness.drain(processor).processed == 1)
        #expect(try await harness.inbound(poison).status == "processed")
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events") == 3, "nothing of the first pass was kept twice")
    }

    @Test("a provider timeout is retried with backoff on the injected clock, then succeeds")
    func timeoutThenSuccess() async throws {
        let harness = try await ProcessingHarness.make("fail_timeout")
        let processor = harness.processor(maxAttempts: 5)
        harness.pxp.setPayment(NormalizationPXPTests.fetched("TXT", "Captured", .captured))
        harness.pxp.fail("TXT", with: [ProviderAPIError(.timeout, "no answer within 5 s"), ProviderAPIError(.unavailable, "HTTP 503")])
        let id = try await harness.insert(.pxp, Bodies.pxpTransaction("TXT", state: "Captured"))

        #expect(try await harness.drain(processor).retried == 1)
        var row = try await harness.inbound(id)
        #expect(row.status == "pending" && row.attempts == 1)
        #expect(row.lastError == "fetching pxp transaction failed: timeout: no answer within 5 s")
        // jitter 0.5 → 0.75 of the 1 s base delay.
        #expect(abs(row.nextAttemptAt.timeIntervalSince(harness.clock.now) - 0.75) < 0.01)
        #expect(try await harness.drain(processor).claimed == 0, "not due yet")

        harness.clock.advance(by: 1)
        #expect(try await harness.drain(processor).retried == 1)
        row = try await harness.inbound(id)
        #expect(row.attempts == 2)
        #expect(abs(row.nextAttemptAt.timeIntervalSince(harness.clock.now) - 1.5) < 0.01, "doubles")

        harness.clock.advance(by: 2)
        #expect(try await harness.drain(processor).processed == 1)
        row = try await harness.inbound(id)
        #expect(row.status == "processed" && row.attempts == 3 && row.lastError == nil)
        #expect(try await harness.payment(.pxp, "TXT")?.status == "captured")
    }

    @Test("a failure that keeps retrying is dead after PAYHOOK_MAX_ATTEMPTS, with one open dead letter")
    func exhausted() async throws {
        let harness = try await ProcessingHarness.make("fail_exhausted")
        let processor = harness.processor(maxAttempts: 3)
        harness.pxp.fail("TXX", with: Array(repeating: ProviderAPIError(.timeout, "no answer"), count: 10))
        let id = try await harness.insert(.pxp, Bodies.pxpTransaction("TXX", state: "Authorised"))
        for _ in 0..<3 {
            try await harness.drain(processor)
            harness.clock.advance(by: 3600)
        }
        let row = try await harness.inbound(id)
        #expect(row.status == "dead" && row.attempts == 3)
        #expect(try await harness.text("SELECT reason || ' / ' || error AS v FROM dead_letters WHERE source_id = $1", [.int(id)])
                == "max_attempts_exceeded / fetching pxp transaction failed: timeout: no answer")
        #expect(try await harness.text("SELECT provider AS v FROM dead_letters WHERE source_id = $1", [.int(id)]) == "pxp")
        #expect(harness.pxp.calls == 3)
    }

    @Test("a 404 from the provider is a dead letter at once, saying what was not found")
    func notFound() async throws {
        let harness = try await ProcessingHarness.make("fail_404")
        let id = try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORD404", notification: 1))
        try await harness.drain(harness.processor())
        let row = try await harness.inbound(id)
        #expect(row.status == "dead" && row.attempts == 1)
        #expect(try await harness.text("SELECT reason AS v FROM dead_letters WHERE source_id = $1", [.int(id)]) == "not_found_at_provider")
        #expect(row.lastError == "mercadopago order not found at provider (not_found: order not found)")
    }

    @Test("two processors racing on one payment's events serialize and converge")
    func racing() async throws {
        let harness = try await ProcessingHarness.make("race")
        // Two payments, interleaved, so that each multi-event batch needs both payments' locks.
        var bodies: [String] = []
        for psp in ["RACE-A", "RACE-B"] {
            bodies.append(Bodies.adyen(Bodies.adyenItem(psp: psp, code: "AUTHORISATION", value: 10000)))
            bodies.append(Bodies.adyen(Bodies.adyenItem(psp: "C-\(psp)", original: psp, code: "CAPTURE", value: 10000)))
            for n in 0..<40 {
                bodies.append(Bodies.adyen(Bodies.adyenItem(psp: "R\(n)-\(psp)", original: psp, code: "REFUND", value: 100)))
            }
        }
        for body in bodies.shuffled() { try await harness.insert(.adyen, body) }
        let first = harness.processor(batchSize: 3)
        let second = harness.processor(batchSize: 3)
        async let a = harness.drain(first)
        async let b = harness.drain(second)
        let (ra, rb) = try await (a, b)
        #expect(ra.processed + rb.processed == bodies.count)
        #expect(ra.processed > 0 && rb.processed > 0, "both processors did work: \(ra.processed) / \(rb.processed)")
        for psp in ["RACE-A", "RACE-B"] {
            #expect(try await harness.payment(.adyen, psp) == PaymentRow(
                status: "partially_refunded", amountMinor: 10000, currency: "EUR", refundedMinor: 4000, chargebacks: 0, reversals: 0))
        }
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events") == Int64(bodies.count))
        #expect(try await harness.scalar("SELECT count(*) AS n FROM inbound_events WHERE status <> 'processed'") == 0)
    }

    @Test("the run loop wakes on NOTIFY, processes, and stops gracefully", arguments: ProcessorThreads.allCases)
    func runLoop(threads: ProcessorThreads) async throws {
        let harness = try await ProcessingHarness.make("loop_\(threads.rawValue)")
        let processor = harness.processor(workers: 2, threads: threads)
        let running = Task { await processor.run() }
        let id = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "LOOP1", code: "AUTHORISATION", value: 100)))
        let done = await eventually(timeout: .seconds(10)) {
            (try? await harness.inbound(id).status) == "processed"
        }
        #expect(done)
        processor.stop()
        await running.value
        #expect(try await harness.payment(.adyen, "LOOP1")?.status == "authorized")
    }
}
