import Foundation
import PayhookCore
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookProcessing

extension PayhookServer {
    /// The processor for the `processor` role, configured from the environment.
    static func makeProcessor(configuration: Configuration, databaseURL: String, pool: PostgresPool,
                              clients: PaymentProviderClients, logger: Logger, metrics: MetricsRegistry) -> InboundEventProcessor {
        var settings = ProcessorSettings()
        settings.workers = configuration.processorWorkers
        settings.batchSize = configuration.processorBatchSize
        settings.threads = configuration.processorThreads
        settings.maxAttempts = configuration.maxAttempts
        return InboundEventProcessor(
            pool: pool, conninfo: configuration.listenURL(databaseURL: databaseURL), clients: clients,
            hooks: .fulfillment(configuration.fulfillment, pool: pool).then(.subscriptions), settings: settings,
            logger: logger.with(["role": .string(ServeRole.processor.rawValue)]), metrics: metrics)
    }

    /// The provider API clients processors fetch thin webhooks with, one per provider whose
    /// credentials are configured. A provider left out answers its thin events with a retryable
    /// "no API client configured" error, so they reach the dead letters (replayable), never a guess.
    static func providerClients(configuration: Configuration, logger: Logger) -> PaymentProviderClients {
        providerClients(configuration: configuration, http: providerHTTPClient(configuration: configuration), logger: logger)
    }

    /// The HTTP client the provider API clients share, a part of the process stopped after
    /// everything that calls providers.
    static func providerHTTPClient(configuration: Configuration) -> CurlHTTPClient {
        // Enough slots for every charge the worker keeps in flight plus processor fetches.
        CurlHTTPClient(maxConcurrent: max(64, configuration.subscriptions.chargeConcurrency + 32), name: "provider HTTP client")
    }

    static func providerClients(configuration: Configuration, http: any HTTPClient, logger: Logger) -> PaymentProviderClients {
        let api = configuration.providerAPIs
        var clients: [any PaymentProviderClient] = []
        if let token = api.mercadoPagoAccessToken, let url = URL(string: api.mercadoPagoBaseURL) {
            clients.append(MercadoPagoAPIClient(
                baseURL: url, accessToken: token.value, http: http, currencies: configuration.mercadoPago.currencies))
        }
        if let key = api.adyenAPIKey, let account = api.adyenMerchantAccount, let url = URL(string: api.adyenBaseURL) {
            clients.append(AdyenAPIClient(baseURL: url, apiKey: key.value, merchantAccount: account, http: http,
                                          returnURL: api.adyenReturnURL))
        }
        if let clientID = api.pxpClientID, let tokenID = api.pxpTokenID, let tokenValue = api.pxpTokenValue,
           let merchant = api.pxpMerchant, let site = api.pxpSite, let url = URL(string: api.pxpBaseURL) {
            clients.append(PXPAPIClient(
                baseURL: url, clientID: clientID, tokenID: tokenID, tokenValue: tokenValue.value,
                merchant: merchant, site: site, http: http))
        }
        logger.info("provider API clients", [
            "configured": .string(clients.map(\.provider.rawValue).sorted().joined(separator: ",")),
        ])
        return PaymentProviderClients(clients)
    }

}
