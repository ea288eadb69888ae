import PayhookCore
import PayhookProviders

/// The verifier for each configured (provider, account) route, built once from configuration.
struct WebhookVerifiers: Sendable {
    enum Lookup {
        case verifier(any WebhookVerifier)
        /// `/webhooks/{provider}/{account}` names an account with no secrets: 404.
        case unknownAccount
        /// The provider's default route has no secret: refuse (503) rather than accept unverified.
        case notConfigured
    }

    private let routes: [ProviderID: [String: any WebhookVerifier]]

    init(configuration: Configuration) {
        var routes: [ProviderID: [String: any WebhookVerifier]] = [:]
        for (provider, rings) in configuration.webhookSecrets.rings {
            for (account, ring) in rings {
                let verifier: any WebhookVerifier
                switch provider {
                case .mercadopago:
                    verifier = MercadoPagoSignatureVerifier(
                        secrets: ring, tolerance: configuration.mercadoPago.timestampTolerance,
                        stalePolicy: configuration.mercadoPago.stalePolicy)
                case .adyen:
                    verifier = AdyenSignatureVerifier(hmacKeys: ring)
                case .pxp:
                    verifier = PXPSignatureVerifier(
                        keys: ring, algorithm: configuration.pxp.algorithm,
                        tolerance: configuration.pxp.timestampTolerance, stalePolicy: configuration.pxp.stalePolicy)
                }
                routes[provider, default: [:]][account] = verifier
            }
        }
        self.routes = routes
    }

    func lookup(provider: ProviderID, account: String?) -> Lookup {
        if let account {
            guard let verifier = routes[provider]?[Configuration.accountKey(account)] else { return .unknownAccount }
            return .verifier(verifier)
        }
        guard let verifier = routes[provider]?[""] else { return .notConfigured }
        return .verifier(verifier)
    }
}
