import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCore
import PayhookProviders

@Suite("Configuration")
struct ConfigurationTests {
    static let adyenKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

    func parse(_ environment: [String: String], files: [String: String] = [:]) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(environment: environment) { path in
            guard let contents = files[path] else { throw CocoaLikeError() }
            return contents
        }
    }
    struct CocoaLikeError: Error {}

    @Test("an empty environment yields the documented defaults")
    func defaults() throws {
        let configuration = try parse([:])
        #expect(configuration.listen == .init(host: "0.0.0.0", port: 8080))
        #expect(configuration.adminListen == .init(host: "127.0.0.1", port: 9090))
        #expect(configuration.maxAttempts == 8)
        #expect(configuration.maxBodyBytes == 1 << 20)
        #expect(configuration.databaseURL == nil)
        #expect(configuration.webhookSecrets.rings.isEmpty)
        // PXP does not document X-Signature-Timestamp's format and retries for about ten
        // seconds only, so a timestamp payhook misreads must not cost the event: warn.
        #expect(configuration.pxp.stalePolicy == .warn)
        #expect(configuration.mercadoPago.stalePolicy == .warn)
    }

    @Test("processor workers get threads of their own unless PAYHOOK_PROCESSOR_THREADS=shared; other words are refused")
    func processorThreads() throws {
        #expect(try parse([:]).processorThreads == .dedicated)
        #expect(try parse(["PAYHOOK_PROCESSOR_THREADS": "shared"]).processorThreads == .shared)
        let error = #expect(throws: ConfigurationError.self) { try parse(["PAYHOOK_PROCESSOR_THREADS": "many"]) }
        #expect(error?.problems.map(\.variable) == ["PAYHOOK_PROCESSOR_THREADS"])
    }

    @Test("PAYHOOK_DATABASE_POOLING is session or transaction; behind a transaction pooler LISTEN needs PAYHOOK_SESSION_DATABASE_URL")
    func databasePooling() throws {
        let plain = try parse([:])
        #expect(plain.databasePooling == .session)
        #expect(plain.listenURL(databaseURL: "postgresql:///db") == "postgresql:///db")
        let pooled = try parse(["PAYHOOK_DATABASE_POOLING": "transaction"])
        #expect(pooled.databasePooling == .transaction)
        #expect(pooled.listenURL(databaseURL: "postgresql://bouncer/db") == nil)
        let direct = try parse(["PAYHOOK_DATABASE_POOLING": "transaction",
                                "PAYHOOK_SESSION_DATABASE_URL": "postgresql://primary/db"])
        #expect(direct.listenURL(databaseURL: "postgresql://bouncer/db") == "postgresql://primary/db")
        let error = #expect(throws: ConfigurationError.self) { try parse(["PAYHOOK_DATABASE_POOLING": "statement"]) }
        #expect(error?.problems.map(\.variable) == ["PAYHOOK_DATABASE_POOLING"])
        #expect(error?.description.contains("session, transaction") == true, "\(String(describing: error))")
    }

    @Test("every problem is reported at once, naming the variable and never the secret")
    func reportsEverything() {
        let environment = [
            "PAYHOOK_LISTEN": "nonsense",
            "PAYHOOK_MAX_ATTEMPTS": "0",
            "PAYHOOK_ADYEN_HMAC_KEYS": "zz-not-hex-supersecret",
            "PAYHOOK_ADMIN_TOKEN": "tok", "PAYHOOK_ADMIN_TOKEN_FILE": "/x",
            "PAYHOOK_PXP_SIGNATURE_ALGORITHM": "md5",
            "PAYHOOK_FULFILLMENT_URL": "ftp://example",
        ]
        let error = #expect(throws: ConfigurationError.self) { try parse(environment) }
        let variables = Set(error?.problems.map(\.variable) ?? [])
        #expect(variables == [
            "PAYHOOK_LISTEN", "PAYHOOK_MAX_ATTEMPTS", "PAYHOOK_ADYEN_HMAC_KEYS", "PAYHOOK_ADMIN_TOKEN",
            "PAYHOOK_PXP_SIGNATURE_ALGORITHM", "PAYHOOK_FULFILLMENT_URL",
        ])
        #expect(error?.description.contains("supersecret") == false)
        #expect(error?.description.contains("tok\n") == false)
    }

    @Test("retention problems are reported with every other problem, by the one parser")
    func retentionProblemsWithTheRest() {
        let environment = [
            "PAYHOOK_MAX_ATTEMPTS": "0",
            "PAYHOOK_RETENTION_DAYS": "29",
            "PAYHOOK_RETENTION_INTERVAL_SECONDS": "soon",
        ]
        let error = #expect(throws: ConfigurationError.self) { try parse(environment) }
        #expect(Set(error?.problems.map(\.variable) ?? []) == [
            "PAYHOOK_MAX_ATTEMPTS", "PAYHOOK_RETENTION_DAYS", "PAYHOOK_RETENTION_INTERVAL_SECONDS",
        ])
    }

    @Test("retention settings are part of the configuration")
    func retentionSettings() throws {
        #expect(try parse([:]).retention == RetentionPolicy())
        let retention = try parse(["PAYHOOK_RETENTION_DAYS": "90", "PAYHOOK_JOB_RETENTION_DAYS": "0"]).retention
        #expect(retention.processedInboundDays == 90 && retention.finishedJobDays == 0)
    }

    @Test("key rings are found for the default route and for each account")
    func perAccountRings() throws {
        let configuration = try parse([
            "PAYHOOK_ADYEN_HMAC_KEYS": Self.adyenKey,
            "PAYHOOK_ADYEN_ACME_EU_HMAC_KEYS": "\(Self.adyenKey),\(Self.adyenKey.lowercased())",
            "PAYHOOK_MERCADOPAGO_SECRETS": "current, previous",
            "PAYHOOK_ADYEN_BASE_URL": "https://example.test/",
        ])
        #expect(configuration.webhookSecrets.ring(provider: .adyen, account: nil)?.keys.count == 1)
        #expect(configuration.webhookSecrets.ring(provider: .adyen, account: "acme-eu")?.keys.count == 2)
        #expect(configuration.webhookSecrets.ring(provider: .adyen, account: "other") == nil)
        #expect(configuration.webhookSecrets.ring(provider: .mercadopago, account: nil)?.keys == [Array("current".utf8), Array("previous".utf8)])
        #expect(configuration.webhookSecrets.ring(provider: .pxp, account: nil) == nil)
        #expect(configuration.providerAPIs.adyenBaseURL == "https://example.test")
    }

    @Test("secrets are read from NAME_FILE without the trailing newline, and never printed")
    func secretFiles() throws {
        let configuration = try parse(
            ["PAYHOOK_ADMIN_TOKEN_FILE": "/run/secrets/admin", "DATABASE_URL": "postgresql:///x?password=hunter2"],
            files: ["/run/secrets/admin": "s3cret-token\n"])
        #expect(configuration.adminToken?.value == "s3cret-token")
        let printed = String(describing: configuration)
        #expect(!printed.contains("s3cret-token"))
        #expect(!printed.contains("hunter2"))
    }

    @Test("an unreadable or empty secret file is a problem naming the _FILE variable")
    func unreadableSecretFile() {
        let error = #expect(throws: ConfigurationError.self) {
            try parse(["PAYHOOK_ADMIN_TOKEN_FILE": "/missing", "PAYHOOK_PXP_WEBHOOK_KEYS_FILE": "/empty"], files: ["/empty": "\n"])
        }
        #expect(Set(error?.problems.map(\.variable) ?? []) == ["PAYHOOK_ADMIN_TOKEN_FILE", "PAYHOOK_PXP_WEBHOOK_KEYS_FILE"])
    }
}

@Suite("Configuration: ingress limits")
struct IngressSettingsConfigurationTests {
    func parse(_ environment: [String: String]) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(environment: environment) { _ in throw ConfigurationTests.CocoaLikeError() }
    }

    @Test("the defaults limit each client address and record a bounded share of refused deliveries")
    func defaults() throws {
        let ingress = try parse([:]).ingress
        #expect(ingress.maxConnections == 1024)
        #expect(ingress.maxConnectionsPerIP == 64)
        #expect(ingress.requestTimeoutSeconds == 10)
        #expect(ingress.idleTimeoutSeconds == 10)
        #expect(ingress.maxBodyMemoryBytes == 256 << 20)
        #expect(ingress.rejectedRecording == RejectedRecordingSettings())
        #expect(ingress.allowedAddresses.isEmpty)
    }

    @Test("every ingress limit is read from its variable")
    func parsed() throws {
        let ingress = try parse([
            "PAYHOOK_MAX_CONNECTIONS": "2000", "PAYHOOK_MAX_CONNECTIONS_PER_IP": "0",
            "PAYHOOK_REQUEST_TIMEOUT_SECONDS": "5", "PAYHOOK_IDLE_TIMEOUT_SECONDS": "60",
            "PAYHOOK_MAX_BODY_MEMORY_BYTES": "0",
            "PAYHOOK_REJECTED_RECORD_BURST": "3", "PAYHOOK_REJECTED_RECORD_PER_MINUTE": "0",
            "PAYHOOK_REJECTED_RECORD_MAX_PER_SECOND": "7",
            "PAYHOOK_ADYEN_ALLOWED_CIDRS": "203.0.113.0/24, 2001:db8::/32,198.51.100.7",
        ]).ingress
        #expect(ingress.maxConnections == 2000)
        #expect(ingress.maxConnectionsPerIP == 0)
        #expect(ingress.requestTimeoutSeconds == 5)
        #expect(ingress.idleTimeoutSeconds == 60)
        #expect(ingress.maxBodyMemoryBytes == 0)
        #expect(ingress.rejectedRecording.perSourceBurst == 3)
        #expect(ingress.rejectedRecording.perSourcePerMinute == 0)
        #expect(ingress.rejectedRecording.totalPerSecond == 7)
        let adyen = try #require(ingress.allowedAddresses[.adyen])
        #expect(adyen.allows("203.0.113.250"))
        #expect(adyen.allows("::ffff:203.0.113.1"))
        #expect(adyen.allows("2001:db8:1::5"))
        #expect(adyen.allows("198.51.100.7"))
        #expect(!adyen.allows("198.51.100.8"))
        #expect(!adyen.allows("203.0.114.1"))
        #expect(!adyen.allows(""))
        #expect(ingress.allowedAddresses[.pxp] == nil)
    }

    @Test("bad ingress values are all reported, each naming its variable")
    func problems() {
        let error = #expect(throws: ConfigurationError.self) {
            try parse([
                "PAYHOOK_MAX_CONNECTIONS": "10", "PAYHOOK_MAX_CONNECTIONS_PER_IP": "11",
                "PAYHOOK_REQUEST_TIMEOUT_SECONDS": "0", "PAYHOOK_IDLE_TIMEOUT_SECONDS": "x",
                "PAYHOOK_REJECTED_RECORD_BURST": "0", "PAYHOOK_REJECTED_RECORD_MAX_PER_SECOND": "-1",
                "PAYHOOK_MAX_BODY_MEMORY_BYTES": "1000",
                "PAYHOOK_PXP_ALLOWED_CIDRS": "10.0.0.0/33", "PAYHOOK_MERCADOPAGO_ALLOWED_CIDRS": "example.com",
            ])
        }
        #expect(Set(error?.problems.map(\.variable) ?? []) == [
            "PAYHOOK_MAX_CONNECTIONS_PER_IP", "PAYHOOK_REQUEST_TIMEOUT_SECONDS", "PAYHOOK_IDLE_TIMEOUT_SECONDS",
            "PAYHOOK_REJECTED_RECORD_BURST", "PAYHOOK_REJECTED_RECORD_MAX_PER_SECOND", "PAYHOOK_PXP_ALLOWED_CIDRS",
            "PAYHOOK_MERCADOPAGO_ALLOWED_CIDRS", "PAYHOOK_MAX_BODY_MEMORY_BYTES",
        ])
    }
}

// MARK: - Mercado Pago currencies (orders that name none)

@Suite("Configuration: Mercado Pago currencies")
struct MercadoPagoCurrencyConfigurationTests {
    func parse(_ environment: [String: String]) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(environment: environment) { _ in throw ConfigurationTests.CocoaLikeError() }
    }

    @Test("unset, the order's site decides; PAYHOOK_MERCADOPAGO_CURRENCY covers every account, an account's own variable wins")
    func perAccount() throws {
        #expect(try parse([:]).mercadoPago.currencies == MercadoPagoCurrencyOverrides())
        let configuration = try parse([
            "PAYHOOK_MERCADOPAGO_SECRETS": "s0",
            "PAYHOOK_MERCADOPAGO_ACME_EU_SECRETS": "s1",
            "PAYHOOK_MERCADOPAGO_CURRENCY": "ars",
            "PAYHOOK_MERCADOPAGO_ACME_EU_CURRENCY": "USD",
        ])
        let currencies = configuration.mercadoPago.currencies
        #expect(currencies.currency(forAccount: "") == "ARS")
        #expect(currencies.currency(forAccount: "acme-eu") == "USD")
        #expect(currencies.currency(forAccount: "other") == "ARS")
        #expect(configuration.webhookSecrets.ring(provider: .mercadopago, account: "acme-eu")?.keys.count == 1,
                "a currency variable is not mistaken for a key ring")
        #expect(configuration.webhookSecrets.rings[.mercadopago]?.count == 2, "nor does it add a route")
    }

    @Test("a currency that is not ISO 4217, or one for an account with no webhook secrets, is a problem naming the variable")
    func problems() {
        let error = #expect(throws: ConfigurationError.self) {
            try parse([
                "PAYHOOK_MERCADOPAGO_SECRETS": "s0",
                "PAYHOOK_MERCADOPAGO_CURRENCY": "pesos",
                "PAYHOOK_MERCADOPAGO_TYPO_CURRENCY": "ARS",
            ])
        }
        #expect(Set(error?.problems.map(\.variable) ?? []) == ["PAYHOOK_MERCADOPAGO_CURRENCY", "PAYHOOK_MERCADOPAGO_TYPO_CURRENCY"])
    }
}
