import PayhookConsole
import PayhookPostgres

extension OnCallConsole {
    /// The console over `pool` with this process's configuration: the fulfillment and charge
    /// rules its actions follow, and who may name the operator behind an authenticating proxy.
    init(configuration: Configuration, pool: PostgresPool, credentials: AdminCredentialStore) {
        let proxyIdentity = configuration.adminIdentityHeader.flatMap { header in
            configuration.adminTrustedProxies.map { (header: header, proxies: $0) }
        }
        self.init(pool: pool, credentials: credentials, proxyIdentity: proxyIdentity,
                  fulfillment: configuration.fulfillment, subscriptions: configuration.subscriptions)
    }
}

/// The console reads the credentials in force from the same store the bearer check uses.
extension AdminCredentialStore: AdminCredentialSource {}
