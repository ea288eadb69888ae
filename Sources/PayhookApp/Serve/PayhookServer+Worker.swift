import Foundation
import PayhookCore
import PayhookHTTP
import PayhookPostgres
import PayhookQueue
import PayhookOperations
import PayhookProcessing
import PayhookSubscriptions
import PayhookCallbacks

extension PayhookServer {
    /// How long in-flight jobs get to finish on SIGTERM before they are cancelled and their
    /// leases released (so another process picks them up at once, not after the lease).
    static let jobGracePeriod: Duration = .seconds(20)

    /// The job worker of the `worker` role: fulfillment, merchant callbacks and recurring
    /// charges, each handler wrapped so its runs are counted and timed by kind. Concurrency is
    /// `PAYHOOK_CHARGE_CONCURRENCY`: charges are the slow calls (provider round trips).
    static func makeWorker(configuration: Configuration, databaseURL: String, pool: PostgresPool, http: any HTTPClient,
                           subscriptions: SubscriptionRuntime, metrics: MetricsRegistry, logger: Logger) throws -> JobWorker {
        let queue = JobQueue(pool: pool)
        let workerLogger = logger.with(["role": .string(ServeRole.worker.rawValue)])
        let signer = try configuration.fulfillmentSecret.map { secret in try StandardWebhookSigner(secret: secret.value) }
        if signer == nil {
            workerLogger.warning("PAYHOOK_FULFILLMENT_SECRET is not set: merchant callbacks wait (and retry) until it is")
        }
        let handlers = [
            AnyJobHandler(FulfillOrderHandler(pool: pool, queue: queue, settings: configuration.fulfillment,
                                              metrics: metrics, logger: workerLogger)),
            AnyJobHandler(MerchantCallbackDelivery(pool: pool, http: http, signer: signer,
                                                   defaultURL: configuration.fulfillmentURL,
                                                   timeout: configuration.fulfillment.callbackTimeout,
                                                   metrics: metrics, logger: workerLogger,
                                                   destinations: configuration.fulfillment.callbackDestinations)),
            subscriptions.chargeHandler,
        ]
        metrics.describe("payhook_fulfillments_total", type: "counter",
                         help: "fulfill_order decisions: verified (order.paid queued) or needs_review (mismatch, not fulfilled).")
        metrics.describe("payhook_merchant_callbacks_total", type: "counter",
                         help: "Merchant callback attempts by type and outcome (delivered, gone, failed_attempt, error, refused).")
        let jobMetrics = JobMetrics(registry: metrics)
        return try JobWorker(queue: queue, handlers: handlers.map(jobMetrics.instrument),
                             configuration: JobWorker.Configuration(
                                concurrency: subscriptions.settings.chargeConcurrency, lease: configuration.jobLease,
                                listenConninfo: configuration.listenURL(databaseURL: databaseURL),
                                rescueInterval: min(.seconds(30), configuration.jobLease / 2),
                                shutdownGracePeriod: jobGracePeriod),
                             logger: workerLogger)
    }


}

/// Job runs by kind and outcome, how long they ran and how long they waited to start.
struct JobMetrics: Sendable {
    let registry: MetricsRegistry

    init(registry: MetricsRegistry) {
        self.registry = registry
        registry.describe("payhook_job_runs_total", type: "counter", help: "Job attempts by kind and outcome.")
        registry.describe("payhook_job_duration_seconds", type: "histogram", help: "Time one job attempt ran, by kind.")
        registry.describe("payhook_job_wait_seconds", type: "histogram",
                          help: "Time from a job becoming due to its attempt starting, by kind.")
    }

    func instrument(_ handler: AnyJobHandler) -> AnyJobHandler {
        let registry = self.registry
        return AnyJobHandler(kind: handler.kind) { job in
            registry.observe("payhook_job_wait_seconds", [("kind", job.kind)], max(0, Date().timeIntervalSince(job.runAt)))
            let started = ContinuousClock.now
            let outcome: JobOutcome
            do {
                outcome = try await handler.run(job)
            } catch {
                registry.increment("payhook_job_runs_total", [("kind", job.kind), ("outcome", "error")])
                registry.histogram("payhook_job_duration_seconds", [("kind", job.kind)]).observe(ContinuousClock.now - started)
                throw error
            }
            let name = switch outcome {
            case .succeeded: "succeeded"
            case .retry: "retry"
            case .snooze: "snooze"
            case .discard: "discarded"
            }
            registry.increment("payhook_job_runs_total", [("kind", job.kind), ("outcome", name)])
            registry.histogram("payhook_job_duration_seconds", [("kind", job.kind)]).observe(ContinuousClock.now - started)
            return outcome
        }
    }
}
