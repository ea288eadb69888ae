package import PayhookLedger
package import PayhookPostgres
import PayhookQueue

extension ProcessingHooks {
    /// Fulfillment reacts to processing: after each batch, `FulfillmentTrigger.afterProcessing`
    /// links provider orders and reference-only payments to registered orders and queues what
    /// the touched orders owe (`fulfill_order`, reversal and overpayment callbacks), in the
    /// batch's transaction. Its report counts the payments newly reported as `order.overpaid`.
    /// - Parameter pool: the pool of the `JobQueue` the follow-ups are enqueued on (they are
    ///   written on the processor's connection).
    package static func fulfillment(_ settings: FulfillmentSettings, pool: PostgresPool) -> ProcessingHooks {
        let trigger = FulfillmentTrigger(queue: JobQueue(pool: pool), settings: settings)
        return ProcessingHooks(
            tokenStatusChanged: { _, _, _, _ in },
            afterBatch: { touched, connection in
                AfterBatchReport(overpayments: try await trigger.afterProcessing(touched, on: connection))
            })
    }
}
