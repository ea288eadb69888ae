import PayhookCore
import PayhookIngress
import PayhookProviders

extension WebhookVerifiers {
    /// The verifier for each configured (provider, account) route.
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
        self.init(routes: routes)
    }
}
