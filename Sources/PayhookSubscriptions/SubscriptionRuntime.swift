package import Foundation
package import PayhookCore
package import PayhookPostgres
package import PayhookProviders
package import PayhookQueue

/// Builds what one `payhook serve` process runs for recurring charges, from the configuration:
/// the scheduler loop and the `charge_recurring` handler (to register on the process's
/// `JobWorker` next to `merchant_callback`).
///
/// ```swift
/// let subscriptions = SubscriptionRuntime(settings: configuration.subscriptions, pool: pool, queue: queue,
///                                         clients: clients, metrics: metrics, logger: logger)
/// let worker = try JobWorker(queue: queue, handlers: [subscriptions.chargeHandler, callbacks], …)
/// async let scheduling: Void = subscriptions.scheduler.run()   // stop with scheduler.stop()
/// ```
/// Every process may run both: schedulers coordinate through `SKIP LOCKED`, workers through the
/// job queue. `settings.chargeConcurrency` is the intended `JobWorker` concurrency for charges.
package struct SubscriptionRuntime: Sendable {
    package let settings: SubscriptionSettings
    package let scheduler: SubscriptionScheduler
    let handler: ChargeRecurringHandler

    package init(settings: SubscriptionSettings, pool: PostgresPool, queue: JobQueue, clients: PaymentProviderClients,
         metrics: MetricsRegistry, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) {
        self.settings = settings
        scheduler = SubscriptionScheduler(pool: pool, queue: queue, settings: settings,
                                          logger: logger.with(["role": "scheduler"]), metrics: metrics, now: now)
        handler = ChargeRecurringHandler(pool: pool, queue: queue, clients: clients, settings: settings, metrics: metrics,
                                         logger: logger.with(["job.kind": .string(ChargeRecurringHandler.kind)]), now: now)
    }

    /// The handler, type-erased for `JobWorker`.
    package var chargeHandler: AnyJobHandler { AnyJobHandler(handler) }
}
