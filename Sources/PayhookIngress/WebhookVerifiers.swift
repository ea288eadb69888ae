package import PayhookCore
package import PayhookProviders

/// The verifier for each configured (provider, account) route, built once from configuration.
package struct WebhookVerifiers: Sendable {
    package enum Lookup {
        case verifier(any WebhookVerifier)
        /// `/webhooks/{provider}/{account}` names an account with no secrets: 404.
        case unknownAccount
        /// The provider's default route has no secret: refuse (503) rather than accept unverified.
        case notConfigured
    }

    private let routes: [ProviderID: [String: any WebhookVerifier]]

    /// - Parameter routes: the verifier per provider and account key (`""` for the provider's
    ///   default route), as the composition root builds them from configuration.
    package init(routes: [ProviderID: [String: any WebhookVerifier]]) {
        self.routes = routes
    }

    package func lookup(provider: ProviderID, account: String?) -> Lookup {
        if let account {
            guard let verifier = routes[provider]?[EnvironmentNames.accountKey(account)] else { return .unknownAccount }
            return .verifier(verifier)
        }
        guard let verifier = routes[provider]?[""] else { return .notConfigured }
        return .verifier(verifier)
    }
}
