import PayhookLedger
import PayhookPostgres
import PayhookQueue

/// Wakes the jobs of charges whose outcome is open (unknown, pending) when the processor writes
/// a payment or order that carries their merchant reference: the provider's webhook is the
/// authority that settles a charge whose answer was lost, even one long dead-lettered as
/// `charge_outcome_unknown`. The woken job reconciles from the stored row and sends nothing.
package enum ChargeSettlementTrigger {
    /// Runs in the processor batch's transaction. Costs one indexed statement per batch (and the
    /// queue's requeue when it finds open charges), and nothing when the batch wrote no payment
    /// or order with a reference.
    static func afterProcessing(_ touched: TouchedRows, on connection: PostgresConnection) async throws {
        guard !touched.unlinkedPaymentIDs.isEmpty || !touched.orderIDs.isEmpty else { return }
        let keys = try await connection.query(SubscriptionSQL.shared.openChargeKeysForPayments, [
            .integerArray(touched.unlinkedPaymentIDs), .integerArray(touched.orderIDs.sorted()),
        ]).rows.map { row throws(PostgresError) in try row.decode("idempotency_key", as: String.self) }
        // A dead-lettered job gets its attempts back; a running one is left alone (it reconciles
        // before any resend anyway).
        try await JobQueue.requeue(kind: ChargeRecurringArgs.kind, uniqueKeys: keys, from: [.available, .retryable, .discarded],
                                   on: connection)
    }
}
