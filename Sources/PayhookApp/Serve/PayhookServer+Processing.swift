import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders

extension PayhookServer {
    /// The processor for the `processor` role, configured from the environment.
    static func makeProcessor(configuration: Configuration, databaseURL: String, pool: PostgresPool,
                              logger: Logger) -> InboundEventProcessor {
        var settings = ProcessorSettings()
        settings.workers = configuration.processorWorkers
        settings.batchSize = configuration.processorBatchSize
        settings.retry.maxAttempts = configuration.maxAttempts
        return InboundEventProcessor(
            pool: pool, conninfo: databaseURL, clients: providerClients(configuration: configuration),
            settings: settings, logger: logger.with(["role": "processor"]))
    }

    /// The provider API clients processors fetch thin webhooks with.
    ///
    /// Empty until the HTTP clients land (feat/clients): Adyen and PXP token events need none;
    /// Mercado Pago and PXP transaction events then fail with a retryable "no API client"
    /// error and are dead-lettered after `PAYHOOK_MAX_ATTEMPTS`, from where they can be replayed.
    static func providerClients(configuration: Configuration) -> PaymentProviderClients {
        PaymentProviderClients([])
    }

    /// Runs the processor until `stop()`; returns at once when the role is off.
    func runProcessor() async {
        guard let processor else { return }
        await processor.run()
    }
}
