public import PayhookCore
public import PayhookCrypto
public import PayhookPostgres
public import PayhookProviders
public import PayhookIngress
public import PayhookHTTP
public import PayhookProcessing
public import PayhookSubscriptions
package import PayhookAdmin
package import PayhookOperations

/// Everything payhook reads from its environment, parsed once at start.
///
/// `Configuration.parse` is a pure function of the environment (and a file reader for the
/// `NAME_FILE` forms of secrets) and reports every problem at once, naming the variable and never
/// its secret value.
public struct Configuration: Sendable {
    public var databaseURL: Secret?
    // --- Behind a transaction-mode pooler (docs/deployment.md "Behind PgBouncer") ---
    /// What `DATABASE_URL` leads to (`PAYHOOK_DATABASE_POOLING`): `session` (a server session
    /// per connection, the default) or `transaction` (a transaction-mode pooler such as PgBouncer).
    public var databasePooling: PostgresPooling = .session
    /// A direct connection for what needs a session of its own, LISTEN
    /// (`PAYHOOK_SESSION_DATABASE_URL`); without one, behind a transaction-mode pooler, the
    /// processor and the job worker poll.
    public var sessionDatabaseURL: Secret?
    /// Where LISTEN sessions connect, or `nil` when notifications cannot be received (a
    /// transaction-mode pooler and no `PAYHOOK_SESSION_DATABASE_URL`): then payhook polls.
    public func listenURL(databaseURL: String) -> String? {
        if let sessionDatabaseURL { return sessionDatabaseURL.value }
        return databasePooling == .session ? databaseURL : nil
    }
    // --- end of the pooler settings ---
    public var listen: ListenAddress
    public var adminListen: ListenAddress
    public var adminToken: Secret?
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    public var maxBodyBytes: Int
    /// Connection limits, request deadline, rejected-delivery recording, address allow-lists.
    public var ingress = IngressSettings()
    public var maxAttempts: Int
    public var logLevel: Logger.Level
    public var webhookSecrets: WebhookSecrets
    public var mercadoPago: MercadoPagoSettings
    public var pxp: PXPSettings
    public var providerAPIs: ProviderAPISettings
    public var fulfillmentURL: String?
    public var fulfillmentSecret: Secret?
    /// When an order counts as paid and how callbacks are sent.
    public var fulfillment = FulfillmentSettings()
    /// What the provider sweep looks for and when (`PAYHOOK_SWEEP_*`, `PAYHOOK_CALLBACK_ORDER_EXPIRED`).
    public var sweep = ProviderSweepSettings()
    /// How long deliveries, history and finished jobs are kept (`PAYHOOK_*RETENTION*`).
    package var retention = RetentionPolicy()
    /// Claim loops per process for the `processor` role (`PAYHOOK_PROCESSOR_WORKERS`).
    public var processorWorkers: Int = 2
    /// Inbound events claimed per transaction (`PAYHOOK_PROCESSOR_BATCH`).
    public var processorBatchSize: Int = 100
    /// Where processor workers run (`PAYHOOK_PROCESSOR_THREADS`).
    public var processorThreads: ProcessorThreads = .dedicated
    /// Recurring charges: scheduler, dunning, charge jobs (`PAYHOOK_SCHEDULER_*`, `PAYHOOK_DUNNING_SCHEDULE`,
    /// `PAYHOOK_CHARGE_*`).
    public var subscriptions = SubscriptionSettings()
    /// How long a worker's claim on a job lasts without a heartbeat (`PAYHOOK_JOB_LEASE_SECONDS`):
    /// after a crash, the rescuer hands the job to another worker this long after the last one.
    public var jobLease: Duration = .seconds(60)
    // Database failover and connection budget (docs/deployment.md, "High availability").
    /// Connections in `serve`'s pool (`PAYHOOK_DATABASE_POOL_SIZE`); `nil`: 16 with the worker
    /// role, 8 without.
    public var databasePoolSize: Int?
    /// How long one database call may wait for the server (`PAYHOOK_DATABASE_CALL_TIMEOUT_SECONDS`)
    /// before its connection is discarded; a hung primary cannot hold ingest longer.
    public var databaseCallTimeout: Duration = .seconds(5)
    /// The name of the operator credential `PAYHOOK_ADMIN_TOKEN` (`PAYHOOK_ADMIN_ACTOR`): the
    /// audit log's actor for what is done with that token, on the admin API and in the console.
    public var adminActor: String = Configuration.defaultAdminActor
    public static let defaultAdminActor = "admin-token"
    /// `PAYHOOK_ADMIN_TOKEN` as the operator credential named `adminActor`, when the token is set.
    package var adminTokenCredential: AdminCredential? {
        adminToken.map { AdminCredential(name: adminActor, scope: .operator, token: $0.value) }
    }
    /// `PAYHOOK_ADMIN_CREDENTIALS_FILE`: named credentials with scopes, re-read on SIGHUP.
    public var adminCredentialsFile: String?
    /// The file's credentials as read at start (SIGHUP reads it again: `AdminCredentialStore`).
    package var adminFileCredentials: [AdminCredential] = []
    /// `PAYHOOK_ADMIN_IDENTITY_HEADER`: a request header naming the person an authenticating
    /// reverse proxy signed in; believed only from `adminTrustedProxies`. Off when nil.
    public var adminIdentityHeader: String?
    /// `PAYHOOK_ADMIN_TRUSTED_PROXIES`: the addresses the identity header is believed from.
    public var adminTrustedProxies: AddressAllowList?

    /// `host:port` of a listener.
    public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var description: String { "\(host):\(port)" }
    }

    /// Key rings per provider and account; the empty account is the route without `/{account}`.
    public struct WebhookSecrets: Sendable {
        public var rings: [ProviderID: [String: KeyRing]]

        /// The ring for a delivery's route, or `nil` when none is configured.
        public func ring(provider: ProviderID, account: String?) -> KeyRing? {
            rings[provider]?[account.map(Configuration.accountKey) ?? ""]
        }
    }

    public struct MercadoPagoSettings: Sendable {
        public var timestampTolerance: Duration
        public var stalePolicy: StaleTimestampPolicy
        /// Currencies of accounts whose orders name none (`PAYHOOK_MERCADOPAGO_CURRENCY`,
        /// `PAYHOOK_MERCADOPAGO_<ACCOUNT>_CURRENCY`); unset, the order's site decides.
        public var currencies = MercadoPagoCurrencyOverrides()
    }

    public struct PXPSettings: Sendable {
        public var algorithm: HashAlgorithm
        public var keyEncoding: KeyEncoding
        public var timestampTolerance: Duration
        public var stalePolicy: StaleTimestampPolicy
    }

    public struct ProviderAPISettings: Sendable {
        public var mercadoPagoBaseURL: String
        public var mercadoPagoAccessToken: Secret?
        public var adyenBaseURL: String
        public var adyenAPIKey: Secret?
        public var adyenMerchantAccount: String?
        /// `returnUrl` of Adyen charges (`PAYHOOK_ADYEN_RETURN_URL`); never visited by a
        /// merchant-initiated charge, but Checkout marks the field required.
        public var adyenReturnURL: String = AdyenAPIClient.defaultReturnURL
        public var pxpBaseURL: String
        public var pxpClientID: String?
        public var pxpTokenID: String?
        public var pxpTokenValue: Secret?
        public var pxpMerchant: String?
        public var pxpSite: String?
    }

    /// The environment variable whose value is a provider's comma-separated webhook key ring.
    static func keyRingSuffix(_ provider: ProviderID) -> String { EnvironmentNames.keyRingSuffix(provider) }

    static func keyEncoding(_ provider: ProviderID, pxp: KeyEncoding) -> KeyEncoding {
        switch provider {
        case .mercadopago: .utf8
        case .adyen: .hex
        case .pxp: pxp
        }
    }

    /// How an account name appears inside a variable name: `acme-eu` -> `ACME_EU`.
    public static func accountKey(_ account: String) -> String { EnvironmentNames.accountKey(account) }
}
