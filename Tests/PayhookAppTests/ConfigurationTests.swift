import Testing
@testable import PayhookApp
@testable import PayhookCore

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
