import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookPostgres
import Testing
@testable import PayhookProcessing

/// A processor applies a batch's events one after the other on one transaction, reading what
/// the batch's earlier events wrote. Whatever it reads once per batch or defers to the batch's
/// end, the rows must be those of processing each delivery in a batch of its own.
@Suite("Processing: one batch or one per delivery", .timeLimit(.minutes(5)))
struct BatchEquivalenceTests {
    /// Everything processing writes, without ids and clocks, history in the order it was written.
    static func fingerprint(_ harness: ProcessingHarness) async throws -> [String] {
        let tables = [
            """
            SELECT ((to_jsonb(p) - 'id' - 'order_id' - 'created_at' - 'updated_at')
                    || jsonb_build_object('order', o.provider_order_id))::text AS v
            FROM payments p LEFT JOIN orders o ON o.id = p.order_id ORDER BY p.provider, p.provider_payment_id
            """,
            "SELECT (to_jsonb(o) - 'id' - 'created_at' - 'updated_at')::text AS v FROM orders o ORDER BY provider, provider_order_id",
            """
            SELECT ((to_jsonb(a) - 'id' - 'payment_id' - 'inbound_event_id' - 'created_at' - 'updated_at')
                    || jsonb_build_object('payment', p.provider_payment_id))::text AS v
            FROM payment_adjustments a JOIN payments p ON p.id = a.payment_id ORDER BY a.provider, a.kind, a.reference
            """,
            "SELECT (to_jsonb(t) - 'id' - 'created_at' - 'updated_at')::text AS v FROM vault_tokens t ORDER BY provider, token",
            """
            SELECT e.type || ' ' || coalesce(p.provider_payment_id, '-') || ' ' || coalesce(o.provider_order_id, '-')
                   || ' ' || coalesce(t.token, '-') || ' ' || e.data::text AS v
            FROM payment_events e LEFT JOIN payments p ON p.id = e.payment_id LEFT JOIN orders o ON o.id = e.order_id
            LEFT JOIN vault_tokens t ON t.id = e.vault_token_id ORDER BY e.id
            """,
            "SELECT status || ' ' || attempts AS v FROM inbound_events ORDER BY id",
        ]
        var lines: [String] = []
        for sql in tables {
            for row in try await harness.pool.query(sql) { lines.append(try row.decode("v")) }
        }
        return lines
    }

    /// Records the first row where the two databases differ.
    static func expectSameRows(_ single: ProcessingHarness, _ batched: ProcessingHarness) async throws {
        let expected = try await fingerprint(single)
        let actual = try await fingerprint(batched)
        #expect(actual.count == expected.count)
        for (index, (want, got)) in zip(expected, actual).enumerated() where want != got {
            Issue.record("row \(index) differs:\n  one per batch: \(want)\n  batched:       \(got)")
            break
        }
    }

    /// Adyen: every order of a payment's five deliveries (refunds before their authorisation,
    /// one refund twice, a new token) and of a dispute's four, all in the inbox at once.
    static func adyenDeliveries() -> [String] {
        var bodies: [String] = []
        for (run, order) in permutations(Array(0..<5)).enumerated() {
            let life = NormalizationAdyenTests.life("EQ\(run)")
            bodies += order.map { life[$0] }
        }
        for (run, order) in permutations(Array(0..<4)).enumerated() {
            let dispute = NormalizationAdyenTests.dispute("EQD\(run)")
            bodies += order.map { dispute[$0] }
        }
        return bodies
    }

    @Test("Adyen lives and disputes in every order: one batch, batches of 7 and one delivery per batch write the same rows",
          arguments: [100, 7])
    func adyen(batchSize: Int) async throws {
        let bodies = Self.adyenDeliveries()
        let single = try await ProcessingHarness.make("eq_adyen_single")
        let singleProcessor = single.processor()
        for body in bodies {
            try await single.insert(.adyen, body)
            try await single.drain(singleProcessor)
        }
        let batched = try await ProcessingHarness.make("eq_adyen_batched_\(batchSize)")
        for body in bodies { try await batched.insert(.adyen, body) }
        let outcome = try await batched.drain(batched.processor(batchSize: batchSize))
        #expect(outcome.processed == bodies.count)

        try await Self.expectSameRows(single, batched)
    }

    @Test("Mercado Pago order lives in every order, completed by fetches: one batch writes what one delivery per batch writes")
    func mercadoPago() async throws {
        let single = try await ProcessingHarness.make("eq_mp_single")
        let batched = try await ProcessingHarness.make("eq_mp_batched")
        // The provider's state is fixed before any delivery, so that every fetch returns the
        // same snapshot in both databases, whenever it runs.
        var deliveries: [(provider: ProviderID, body: String)] = []
        for (run, order) in permutations(Array(0..<5)).enumerated() {
            let orderID = "EQO\(run)"
            let steps = NormalizationMercadoPagoTests.life(orderID)
            for harness in [single, batched] {
                for step in steps {
                    switch step {
                    case .order(let snapshot): harness.mercadoPago.setOrder(snapshot)
                    case .payment(let snapshot): harness.mercadoPago.setPayment(snapshot)
                    }
                }
            }
            for (n, index) in order.enumerated() {
                switch steps[index] {
                case .order:
                    deliveries.append((.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: orderID,
                                                                        notification: run * 10 + n)))
                case .payment(let snapshot):
                    deliveries.append((.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated",
                                                                        id: snapshot.providerPaymentID, notification: run * 10 + n)))
                }
            }
        }
        let singleProcessor = single.processor()
        for delivery in deliveries {
            try await single.insert(delivery.provider, delivery.body)
            try await single.drain(singleProcessor)
        }
        for delivery in deliveries { try await batched.insert(delivery.provider, delivery.body) }
        #expect(try await batched.drain(batched.processor()).processed == deliveries.count)

        try await Self.expectSameRows(single, batched)
    }

    @Test("an event whose history row fails rolls back alone, after earlier events of its payment in the same batch")
    func historyFailureAfterSamePayment() async throws {
        let harness = try await ProcessingHarness.make("eq_history_poison")
        try await harness.pool.query("""
            ALTER TABLE payment_events ADD CONSTRAINT test_poison CHECK (type <> 'payment.captured')
            """)
        let auth = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "HP1", code: "AUTHORISATION", value: 700)))
        let capture = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(
            psp: "C-HP1", original: "HP1", code: "CAPTURE", value: 700)))
        let refund = try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(
            psp: "R-HP1", original: "HP1", code: "REFUND", value: 200)))
        let processor = harness.processor()
        #expect(try await processor.processBatch() == BatchOutcome(claimed: 3, processed: 2, retried: 1, dead: 0))
        #expect(try await harness.inbound(auth).status == "processed")
        #expect(try await harness.inbound(capture).status == "pending")
        #expect(try await harness.inbound(refund).status == "processed")
        #expect(try await harness.payment(.adyen, "HP1") == PaymentRow(
            status: "partially_refunded", amountMinor: 700, currency: "EUR", refundedMinor: 200, chargebacks: 0, reversals: 0))
        let history = try await harness.pool.query("SELECT type, data->>'status_before' AS before FROM payment_events ORDER BY id")
            .rows.map { "\(try $0.decode("type", as: String.self)) from \(try $0.decode("before", as: String?.self) ?? "-")" }
        #expect(history == ["payment.authorized from -", "payment.refunded from authorized"])

        try await harness.pool.query("ALTER TABLE payment_events DROP CONSTRAINT test_poison")
        harness.clock.advance(by: 3600)
        #expect(try await harness.drain(processor).processed == 1)
        #expect(try await harness.scalar("SELECT count(*) AS n FROM payment_events") == 3)
        #expect(try await harness.payment(.adyen, "HP1")?.status == "partially_refunded")
    }
}
