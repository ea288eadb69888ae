import Foundation
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp

/// `payhook send-test` against the built `payhook serve`: what it sends is accepted as genuine,
/// stored under the dedup key it prints, and (with `--emulator`) processed end to end.
@Suite("payhook send-test", .timeLimit(.minutes(5)))
struct SendTestCLITests {
    /// The dedup key from the `  dedup key: …` line of send-test's output.
    static func dedupKeys(in output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            line.hasPrefix("  dedup key: ") ? String(line.dropFirst("  dedup key: ".count)) : nil
        }
    }

    @Test("one event of each provider is accepted by serve, stored under the printed dedup key and processed")
    func endToEnd() async throws {
        let database = try await TestDatabase.migrated("send_test")
        let emulator = try ProviderEmulator()
        try emulator.start()
        defer { emulator.stop() }
        let credentials = emulator.configuration
        let providerAPIs = [
            "PAYHOOK_MERCADOPAGO_BASE_URL": emulator.baseURL(for: .mercadopago).absoluteString,
            "PAYHOOK_MERCADOPAGO_ACCESS_TOKEN": credentials.mercadoPagoAccessToken,
            "PAYHOOK_PXP_BASE_URL": emulator.baseURL(for: .pxp).absoluteString,
            "PAYHOOK_PXP_CLIENT_ID": credentials.pxpClientID, "PAYHOOK_PXP_TOKEN_ID": credentials.pxpTokenID,
            "PAYHOOK_PXP_TOKEN_VALUE": credentials.pxpTokenValue, "PAYHOOK_PXP_MERCHANT": credentials.pxpMerchant,
            "PAYHOOK_PXP_SITE": credentials.pxpSite,
        ]
        let (child, port) = try await PayhookBinary.serve(databaseURL: database.url, environment: providerAPIs)
        defer {
            child.send(signal: SIGKILL)
            child.removeOutputFiles()
        }
        // send-test reads the same variables as serve: the key rings and the PXP account names.
        var environment = TestSecrets.environment.merging(providerAPIs) { $1 }
        environment["PAYHOOK_SEND_TEST_EMULATOR"] = "http://127.0.0.1:\(emulator.port)"
        let to = "http://127.0.0.1:\(port)"

        let cases: [(provider: String, event: String, arguments: [String], answer: String)] = [
            ("adyen", "AUTHORISATION", ["--reference", "order-send-test-1", "--amount", "2500", "EUR"], "200 [accepted]"),
            ("mercadopago", "order.processed", ["--reference", "order-send-test-2"], "200 ok"),
            ("pxp", "transaction.captured", ["--reference", "order-send-test-3", "--amount", "1130", "EUR"], "200 ok"),
        ]
        for (provider, event, arguments, answer) in cases {
            let result = await PayhookCLI.capture(["send-test", provider, event, "--to", to] + arguments, environment: environment)
            #expect(result.termination == .exited(0), "\(provider) \(event): \(result.standardError) \(result.standardOutput)")
            #expect(result.standardOutput.contains("  answer: \(answer)"), "\(result.standardOutput)")
            let key = try #require(Self.dedupKeys(in: result.standardOutput).first, "\(result.standardOutput)")
            let stored = try await database.query(
                "SELECT provider, account FROM inbound_events WHERE dedup_key = $1", [.text(key)]).rows
            #expect(stored.count == 1, "\(provider): no inbound event stored under \(key)")
            #expect(try stored.first?.decode("provider", as: String.self) == provider)
            #expect(try stored.first?.decode("account", as: String.self) == "")

            // Processed, which for Mercado Pago and PXP means fetched from the seeded emulator.
            let processed = await eventually(timeout: .seconds(30)) {
                let status = try? await database.string("SELECT status AS v FROM inbound_events WHERE dedup_key = $1", [.text(key)])
                return status == "processed"
            }
            let lastError = try await database.string("SELECT coalesce(last_error, '') AS v FROM inbound_events WHERE dedup_key = $1", [.text(key)])
            #expect(processed, "\(provider) \(event) was not processed: \(lastError ?? "")")
        }

        let payments = try await database.query(
            "SELECT provider, status, amount_minor, currency FROM payments ORDER BY provider").rows.map {
                "\(try $0.decode("provider", as: String.self)) \(try $0.decode("status", as: String.self)) \(try $0.decode("amount_minor", as: Int64.self)) \(try $0.decode("currency", as: String.self))"
            }
        #expect(payments == ["adyen authorized 2500 EUR", "mercadopago captured 1999 BRL", "pxp captured 1130 EUR"])
    }

    @Test("--account, or the account of a full --to URL, posts to the account's route signed with its own key ring")
    func accountRoute() async throws {
        let database = try await TestDatabase.migrated("send_test_account")
        let (child, port) = try await PayhookBinary.serve(databaseURL: database.url)
        defer {
            child.send(signal: SIGKILL)
            child.removeOutputFiles()
        }
        let result = await PayhookCLI.capture(
            ["send-test", "adyen", "recurring.token.created", "--account", "acme-eu", "--to", "http://127.0.0.1:\(port)", "--count", "2"],
            environment: TestSecrets.environment)
        #expect(result.termination == .exited(0), "\(result.standardError)")
        // A full webhook URL names the account by itself.
        let full = await PayhookCLI.capture(
            ["send-test", "adyen", "AUTHORISATION", "--to", "http://127.0.0.1:\(port)/webhooks/adyen/acme-eu", "--json"],
            environment: TestSecrets.environment)
        #expect(full.termination == .exited(0), "\(full.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(full.standardOutput.utf8)) as? [String: Any])
        #expect(object["status"] as? Int == 200 && object["answer"] as? String == "[accepted]")
        #expect(object["url"] as? String == "http://127.0.0.1:\(port)/webhooks/adyen/acme-eu")
        let fullKey = try #require(object["dedup_key"] as? String)
        #expect(fullKey.hasPrefix(try #require((object["ids"] as? [String: String])?["pspReference"])))
        let keys = Self.dedupKeys(in: result.standardOutput) + [fullKey]
        #expect(keys.count == 3 && Set(keys).count == 3, "\(result.standardOutput)")
        for key in keys {
            #expect(try await database.string("SELECT account AS v FROM inbound_events WHERE dedup_key = $1", [.text(key)]) == "acme-eu")
        }
    }

    @Test("--list names the events of every provider")
    func list() async throws {
        let result = await PayhookCLI.capture(["send-test", "--list"])
        #expect(result.termination == .exited(0))
        for event in ["AUTHORISATION", "CAPTURE", "CAPTURE_FAILED", "REFUND", "CHARGEBACK", "recurring.token.created",
                      "recurring.token.disabled", "order.processed", "order.refunded", "payment.updated",
                      "transaction.authorised", "transaction.captured", "transaction.refused", "token.created"] {
            #expect(result.standardOutput.contains("  \(event) "), "missing \(event) in \(result.standardOutput)")
        }
        for provider in ["adyen", "mercadopago", "pxp"] {
            #expect(result.standardOutput.contains("\n\(provider)\n"))
        }
        let json = await PayhookCLI.capture(["send-test", "--list", "--json"])
        let events = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: String]])
        #expect(events.count == SendTestEvent.all.count)
        #expect(events.contains { $0["provider"] == "pxp" && $0["event"] == "transaction.refused" })
    }

    @Test("bad input exits 2 with a message naming what is wrong, before anything is sent", arguments: [
        (["send-test", "stripe", "charge.succeeded"], "unknown provider 'stripe'"),
        (["send-test", "adyen", "order.processed"], "unknown adyen event 'order.processed'"),
        (["send-test", "adyen", "AUTHORISATION", "--amount", "19.99", "EUR"], "--amount needs a positive whole number"),
        (["send-test", "adyen", "AUTHORISATION", "--amount", "1999", "euro"], "--amount needs an ISO 4217 currency code"),
        (["send-test", "adyen", "AUTHORISATION", "--amount", "1999"], "--amount needs minor units and a currency"),
        (["send-test", "adyen", "AUTHORISATION", "--count", "0"], "--count must be a number from 1 to 1000"),
        (["send-test", "adyen", "AUTHORISATION", "--to", "ftp://example"], "--to must be an http or https URL"),
        (["send-test", "adyen", "AUTHORISATION", "--account", "nobody"], "--account nobody: no key ring configured"),
        (["send-test", "pxp", "transaction.captured", "--emulator", "127.0.0.1:8099"], "--emulator must be an http URL"),
        (["send-test", "adyen", "AUTHORISATION", "--to", "http://127.0.0.1:9/webhooks/pxp"], "--to names the /webhooks/pxp route"),
        (["send-test", "adyen"], "send-test needs a PROVIDER and an EVENT"),
    ])
    func badInput(arguments: [String], message: String) async throws {
        // Nothing listens on this port: a bad input must be refused before any connection.
        var environment = TestSecrets.environment
        environment["PAYHOOK_LISTEN"] = "127.0.0.1:9"
        let result = await PayhookCLI.capture(arguments, environment: environment)
        #expect(result.termination == .exited(2), "\(result.standardError)")
        #expect(result.standardError.contains(message), "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    @Test("without a key ring for the provider it exits 1 naming the variable, and prints no secret")
    func missingKeyRing() async throws {
        let result = await PayhookCLI.capture(["send-test", "pxp", "token.created"], environment: [
            "PAYHOOK_LISTEN": "127.0.0.1:9", "PAYHOOK_ADYEN_HMAC_KEYS": TestSecrets.adyen,
        ])
        #expect(result.termination == .exited(1))
        #expect(result.standardError.contains("PAYHOOK_PXP_WEBHOOK_KEYS"), "\(result.standardError)")
        #expect(!result.standardError.contains(TestSecrets.adyen) && !result.standardOutput.contains(TestSecrets.adyen))
    }
}
