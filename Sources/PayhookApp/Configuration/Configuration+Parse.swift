public import PayhookCore
import PayhookPostgres
import PayhookCrypto
import PayhookProviders
import PayhookProcessing
import PayhookSubscriptions
import PayhookAdmin
import PayhookIngress
import PayhookCallbacks

extension Configuration {
    /// Parses the environment. Secrets may be given as `NAME` or as `NAME_FILE` (a path whose
    /// contents, minus one trailing newline, are the value); giving both is an error.
    ///
    /// - Parameters:
    ///   - environment: variable names to values, usually `ProcessInfo.processInfo.environment`.
    ///   - readFile: reads a `NAME_FILE` path; injected so parsing stays testable without files.
    /// - Throws: `ConfigurationError` listing every problem found.
    public static func parse(
        environment: [String: String],
        readFile: @escaping (String) throws -> String
    ) throws(ConfigurationError) -> Configuration {
        var reader = EnvironmentReader(environment: environment, readFile: readFile)

        let pxpEncoding = reader.enumeration("PAYHOOK_PXP_KEY_ENCODING", default: KeyEncoding.utf8)
        var configuration = Configuration(
            databaseURL: reader.secret("DATABASE_URL"),
            listen: reader.listenAddress("PAYHOOK_LISTEN", default: "0.0.0.0:8080"),
            adminListen: reader.listenAddress("PAYHOOK_ADMIN_LISTEN", default: "127.0.0.1:9090"),
            adminToken: reader.secret("PAYHOOK_ADMIN_TOKEN"),
            tlsCertificatePath: reader.string("PAYHOOK_TLS_CERT_FILE"),
            tlsKeyPath: reader.string("PAYHOOK_TLS_KEY_FILE"),
            maxBodyBytes: reader.integer("PAYHOOK_MAX_BODY_BYTES", default: 1 << 20, range: 1024...(64 << 20)),
            maxAttempts: reader.integer("PAYHOOK_MAX_ATTEMPTS", default: 8, range: 1...1000),
            logLevel: reader.enumeration("PAYHOOK_LOG_LEVEL", default: Logger.Level.info),
            webhookSecrets: reader.webhookSecrets(pxpEncoding: pxpEncoding),
            mercadoPago: MercadoPagoSettings(
                timestampTolerance: .seconds(reader.integer("PAYHOOK_MERCADOPAGO_TS_TOLERANCE_SECONDS", default: 300, range: 1...(86400 * 30))),
                stalePolicy: reader.enumeration("PAYHOOK_MERCADOPAGO_STALE_TS", default: StaleTimestampPolicy.warn)),
            pxp: PXPSettings(
                algorithm: reader.enumeration("PAYHOOK_PXP_SIGNATURE_ALGORITHM", default: HashAlgorithm.sha256),
                keyEncoding: pxpEncoding,
                timestampTolerance: .seconds(reader.integer("PAYHOOK_PXP_TS_TOLERANCE_SECONDS", default: 300, range: 1...(86400 * 30))),
                stalePolicy: reader.enumeration("PAYHOOK_PXP_STALE_TS", default: StaleTimestampPolicy.warn)),
            providerAPIs: ProviderAPISettings(
                mercadoPagoBaseURL: reader.url("PAYHOOK_MERCADOPAGO_BASE_URL", default: "https://api.mercadopago.com"),
                mercadoPagoAccessToken: reader.secret("PAYHOOK_MERCADOPAGO_ACCESS_TOKEN"),
                adyenBaseURL: reader.url("PAYHOOK_ADYEN_BASE_URL", default: "https://checkout-test.adyen.com"),
                adyenAPIKey: reader.secret("PAYHOOK_ADYEN_API_KEY"),
                adyenMerchantAccount: reader.string("PAYHOOK_ADYEN_MERCHANT_ACCOUNT"),
                adyenReturnURL: reader.url("PAYHOOK_ADYEN_RETURN_URL", default: AdyenAPIClient.defaultReturnURL),
                pxpBaseURL: reader.url("PAYHOOK_PXP_BASE_URL", default: "https://api-services.test.pxp.io/api/v1"),
                pxpClientID: reader.string("PAYHOOK_PXP_CLIENT_ID"),
                pxpTokenID: reader.string("PAYHOOK_PXP_TOKEN_ID"),
                pxpTokenValue: reader.secret("PAYHOOK_PXP_TOKEN_VALUE"),
                pxpMerchant: reader.string("PAYHOOK_PXP_MERCHANT"),
                pxpSite: reader.string("PAYHOOK_PXP_SITE")),
            fulfillmentURL: reader.optionalURL("PAYHOOK_FULFILLMENT_URL"),
            fulfillmentSecret: reader.secret("PAYHOOK_FULFILLMENT_SECRET"),
            processorWorkers: reader.integer("PAYHOOK_PROCESSOR_WORKERS", default: 2, range: 1...64),
            processorBatchSize: reader.integer("PAYHOOK_PROCESSOR_BATCH", default: 100, range: 1...1000),
            subscriptions: reader.subscriptionSettings()
        )
        if (configuration.tlsCertificatePath == nil) != (configuration.tlsKeyPath == nil) {
            reader.problem("PAYHOOK_TLS_CERT_FILE", "set together with PAYHOOK_TLS_KEY_FILE, or neither")
        }
        configuration.mercadoPago.currencies = reader.mercadoPagoCurrencies(
            accounts: Set(configuration.webhookSecrets.rings[.mercadopago].map { Array($0.keys) } ?? []))
        configuration.fulfillment = reader.fulfillmentSettings()
        configuration.sweep = reader.providerSweepSettings(subscriptions: configuration.subscriptions)
        configuration.retention = reader.retentionPolicy()
        configuration.processorThreads = reader.enumeration("PAYHOOK_PROCESSOR_THREADS", default: ProcessorThreads.dedicated)
        configuration.ingress = reader.ingressSettings(maxBodyBytes: configuration.maxBodyBytes)
        configuration.jobLease = .seconds(reader.integer("PAYHOOK_JOB_LEASE_SECONDS", default: 60, range: 2...3600))
        configuration.adminActor = reader.string("PAYHOOK_ADMIN_ACTOR") ?? Configuration.defaultAdminActor
        if !AdminCredential.isValidName(configuration.adminActor) {
            reader.problem("PAYHOOK_ADMIN_ACTOR", "must be 1 to 64 of A-Z a-z 0-9 . _ @ - (it names the PAYHOOK_ADMIN_TOKEN credential)")
        }
        reader.adminCredentials(into: &configuration)
        configuration.databasePooling = reader.enumeration("PAYHOOK_DATABASE_POOLING", default: PostgresPooling.session)
        configuration.sessionDatabaseURL = reader.secret("PAYHOOK_SESSION_DATABASE_URL")
        if reader.string("PAYHOOK_DATABASE_POOL_SIZE") != nil {
            configuration.databasePoolSize = reader.integer("PAYHOOK_DATABASE_POOL_SIZE", default: 16, range: 2...1000)
        }
        configuration.databaseCallTimeout = .seconds(
            reader.integer("PAYHOOK_DATABASE_CALL_TIMEOUT_SECONDS", default: 5, range: 1...3600))
        if let secret = configuration.fulfillmentSecret {
            do {
                _ = try StandardWebhookSigner(secret: secret.value)
            } catch {
                reader.problem("PAYHOOK_FULFILLMENT_SECRET", "\(error) (Standard Webhooks secret)")
            }
        }
        guard reader.problems.isEmpty else { throw ConfigurationError(problems: reader.problems) }
        return configuration
    }
}

/// Reads typed values and collects problems instead of stopping at the first.
struct EnvironmentReader {
    let environment: [String: String]
    let readFile: (String) throws -> String
    var problems: [ConfigurationProblem] = []

    mutating func problem(_ variable: String, _ message: String) {
        problems.append(ConfigurationProblem(variable: variable, message: message))
    }

    /// A plain value; empty counts as unset.
    func string(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// A secret from `NAME` or `NAME_FILE`.
    mutating func secret(_ name: String) -> Secret? {
        let direct = string(name)
        let file = string(name + "_FILE")
        switch (direct, file) {
        case (nil, nil):
            return nil
        case (.some, .some):
            problem(name, "set either \(name) or \(name)_FILE, not both")
            return nil
        case (let value?, nil):
            return Secret(value)
        case (nil, let path?):
            do {
                var contents = try readFile(path)
                if contents.hasSuffix("\n") { contents.removeLast() }
                if contents.hasSuffix("\r") { contents.removeLast() }
                guard !contents.isEmpty else {
                    problem(name + "_FILE", "file \(path) is empty")
                    return nil
                }
                return Secret(contents)
            } catch {
                problem(name + "_FILE", "cannot read \(path)")
                return nil
            }
        }
    }

    mutating func integer(_ name: String, default value: Int, range: ClosedRange<Int>) -> Int {
        guard let text = string(name) else { return value }
        guard let parsed = Int(text), range.contains(parsed) else {
            problem(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            return value
        }
        return parsed
    }

    mutating func enumeration<T: RawRepresentable & CaseIterable>(_ name: String, default value: T) -> T
    where T.RawValue == String {
        guard let text = string(name) else { return value }
        guard let parsed = T(rawValue: text.lowercased()) else {
            problem(name, "must be one of: " + T.allCases.map(\.rawValue).joined(separator: ", "))
            return value
        }
        return parsed
    }

    mutating func listenAddress(_ name: String, default value: String) -> Configuration.ListenAddress {
        let text = string(name) ?? value
        guard let colon = text.lastIndex(of: ":"),
              let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port)
        else {
            problem(name, "must be host:port, e.g. 127.0.0.1:8080")
            return Configuration.ListenAddress(host: "127.0.0.1", port: 0)
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return Configuration.ListenAddress(host: host.isEmpty ? "0.0.0.0" : host, port: port)
    }

    mutating func url(_ name: String, default value: String) -> String {
        optionalURL(name) ?? value
    }

    mutating func optionalURL(_ name: String) -> String? {
        guard let text = string(name) else { return nil }
        guard text.hasPrefix("http://") || text.hasPrefix("https://") else {
            problem(name, "must be an http:// or https:// URL")
            return nil
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// The recurring-charge settings; defaults in `SubscriptionSettings`.
    mutating func subscriptionSettings() -> SubscriptionSettings {
        var settings = SubscriptionSettings()
        settings.catchUp = enumeration("PAYHOOK_SCHEDULER_CATCH_UP", default: settings.catchUp)
        if let text = string("PAYHOOK_DUNNING_SCHEDULE") {
            switch SubscriptionSettings.parseDunningSchedule(text) {
            case .success(let waits): settings.dunningSchedule = waits
            case .failure(let failure): problem("PAYHOOK_DUNNING_SCHEDULE", failure.message)
            }
        }
        settings.schedulerInterval = .seconds(integer("PAYHOOK_SCHEDULER_INTERVAL_SECONDS", default: 30, range: 1...3600))
        settings.schedulerBatchSize = integer("PAYHOOK_SCHEDULER_BATCH", default: settings.schedulerBatchSize, range: 1...5000)
        settings.pendingRecheck = .seconds(integer("PAYHOOK_CHARGE_PENDING_RECHECK_SECONDS", default: 900, range: 10...86_400))
        settings.maxPendingChecks = integer("PAYHOOK_CHARGE_PENDING_CHECKS", default: settings.maxPendingChecks, range: 1...10_000)
        settings.chargeMaxAttempts = integer("PAYHOOK_CHARGE_MAX_ATTEMPTS", default: settings.chargeMaxAttempts, range: 1...1000)
        settings.chargeConcurrency = integer("PAYHOOK_CHARGE_CONCURRENCY", default: settings.chargeConcurrency, range: 1...1024)
        for provider in ProviderID.allCases {
            let name = "PAYHOOK_\(provider.rawValue.uppercased())_IDEMPOTENCY_WINDOW"
            guard let text = string(name) else { continue }
            switch SubscriptionSettings.parseDuration(text) {
            case .success(let window): settings.idempotencyWindows[provider] = window
            case .failure(let failure): problem(name, "must be one duration such as 7d, 24h or 30m (\(failure.message))")
            }
        }
        settings.maxCatchUp = integer("PAYHOOK_SCHEDULER_MAX_CATCH_UP", default: settings.maxCatchUp, range: 1...1000)
        return settings
    }

    /// `PAYHOOK_MERCADOPAGO_CURRENCY` and every `PAYHOOK_MERCADOPAGO_<ACCOUNT>_CURRENCY`.
    ///
    /// An account's variable must name an account that has webhook secrets
    /// (`PAYHOOK_MERCADOPAGO_<ACCOUNT>_SECRETS`): the account part is whatever sits between the
    /// prefix and `_CURRENCY`, so without that check a misspelt account, or a future setting
    /// whose name happens to end in `_CURRENCY`, would silently become an account's currency.
    /// - Parameter accounts: the account keys that have a Mercado Pago key ring.
    mutating func mercadoPagoCurrencies(accounts: Set<String>) -> MercadoPagoCurrencyOverrides {
        let prefix = "PAYHOOK_MERCADOPAGO_"
        let suffix = "_CURRENCY"
        var overrides = MercadoPagoCurrencyOverrides()
        func currency(_ name: String) -> String? {
            guard let text = string(name) else { return nil }
            let code = text.uppercased()
            guard (try? Money(minorUnits: 0, currency: code)) != nil else {
                problem(name, "must be a three-letter ISO 4217 currency code, e.g. ARS")
                return nil
            }
            return code
        }
        overrides.allAccounts = currency(prefix + "CURRENCY")
        for name in environment.keys.sorted() where name.hasPrefix(prefix) && name.hasSuffix(suffix) {
            guard name.count > prefix.count + suffix.count else { continue }
            let account = String(name.dropFirst(prefix.count).dropLast(suffix.count))
            guard accounts.contains(account) else {
                problem(name, "names no Mercado Pago account: set \(prefix)\(account)_SECRETS for it, or fix the name")
                continue
            }
            if let code = currency(name) { overrides.byAccount[account] = code }
        }
        return overrides
    }

    /// Finds `PAYHOOK_<PROVIDER>_<SUFFIX>` and every `PAYHOOK_<PROVIDER>_<ACCOUNT>_<SUFFIX>`.
    mutating func webhookSecrets(pxpEncoding: KeyEncoding) -> Configuration.WebhookSecrets {
        var rings: [ProviderID: [String: KeyRing]] = [:]
        for provider in ProviderID.allCases {
            let prefix = "PAYHOOK_\(provider.rawValue.uppercased())_"
            let suffix = "_" + Configuration.keyRingSuffix(provider)
            let encoding = Configuration.keyEncoding(provider, pxp: pxpEncoding)
            var names = Set<String>()
            for key in environment.keys where key.hasPrefix(prefix) {
                let base = key.hasSuffix("_FILE") ? String(key.dropLast(5)) : key
                if base.hasSuffix(suffix) { names.insert(base) }
            }
            for name in names.sorted() {
                let middle = name.dropFirst(prefix.count).dropLast(suffix.count)
                let account: String
                if name == prefix + Configuration.keyRingSuffix(provider) {
                    account = ""
                } else if !middle.isEmpty {
                    account = String(middle)
                } else {
                    continue
                }
                guard let secret = secret(name) else { continue }
                do {
                    rings[provider, default: [:]][account] = try KeyRing.parse(secret.value, encoding: encoding)
                } catch {
                    problem(name, "\(error)")
                }
            }
        }
        return Configuration.WebhookSecrets(rings: rings)
    }
}
