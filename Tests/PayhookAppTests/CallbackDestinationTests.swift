import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookIngress
import PayhookPostgres
import Testing
@testable import PayhookAdmin
@testable import PayhookApp
@testable import PayhookHTTP
@testable import PayhookProcessing
@testable import PayhookCallbacks

/// An order's own callback_url, set through the admin API, must not let its caller reach the
/// services beside payhook; the operator's PAYHOOK_FULFILLMENT_URL is trusted as configured.
@Suite("Callback destinations", .timeLimit(.minutes(5)))
struct CallbackDestinationTests {
    static func loopbackAllowed() throws -> FulfillmentSettings {
        var settings = FulfillmentSettings()
        settings.callbackDestinations = CallbackDestinationPolicy(allowed: try AddressAllowList.parse("127.0.0.0/8, ::1/128").get())
        return settings
    }

    static func registration(_ reference: String, callbackURL: String) -> OrderRegistration? {
        try? OrderRegistration.parse(Array("""
            {"provider": "adyen", "merchant_reference": "\(reference)", "provider_order_id": null,
             "amount": {"value": 1999, "currency": "EUR"}, "callback_url": "\(callbackURL)"}
            """.utf8))
    }

    @Test("loopback, link-local (cloud metadata), private, shared, unique-local, multicast and reserved addresses are refused by default",
          arguments: ["127.0.0.1", "127.1.2.3", "0.0.0.0", "10.0.0.5", "172.16.0.1", "172.31.255.254", "192.168.1.1",
                      "169.254.169.254", "100.64.0.1", "100.100.100.200", "192.0.0.192", "198.18.0.1", "224.0.0.1",
                      "255.255.255.255", "::", "::1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd00:ec2::254", "ff02::1",
                      "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::a00:1", "not-an-address"])
    func refusedByDefault(address: String) {
        #expect(!CallbackDestinationPolicy().admits(address: address))
    }

    @Test("public addresses are admitted", arguments: ["93.184.215.14", "8.8.8.8", "172.32.0.1", "100.128.0.1",
                                                      "2606:4700:4700::1111", "::ffff:93.184.215.14"])
    func publicAdmitted(address: String) {
        #expect(CallbackDestinationPolicy().admits(address: address))
    }

    @Test("PAYHOOK_CALLBACK_ALLOWED_CIDRS admits the merchant's internal network and nothing else beside it")
    func allowList() throws {
        let policy = CallbackDestinationPolicy(allowed: try AddressAllowList.parse("10.20.0.0/16").get())
        #expect(policy.admits(address: "10.20.3.4"))
        #expect(!policy.admits(address: "10.21.0.1"))
        #expect(!policy.admits(address: "127.0.0.1"))
        #expect(policy.admits(address: "93.184.215.14"))
    }

    @Test("PAYHOOK_CALLBACK_ALLOWED_CIDRS is parsed into the policy; a bad entry names the variable")
    func configuration() throws {
        func parse(_ environment: [String: String]) throws(ConfigurationError) -> Configuration {
            try Configuration.parse(environment: environment) { _ in throw ConfigurationTests.CocoaLikeError() }
        }
        #expect(try parse([:]).fulfillment.callbackDestinations == CallbackDestinationPolicy())
        let allowing = try parse(["PAYHOOK_CALLBACK_ALLOWED_CIDRS": "10.20.0.0/16, fd12::/48"]).fulfillment.callbackDestinations
        #expect(allowing.admits(address: "10.20.0.9") && allowing.admits(address: "fd12::9") && !allowing.admits(address: "10.21.0.9"))
        let error = #expect(throws: ConfigurationError.self) { try parse(["PAYHOOK_CALLBACK_ALLOWED_CIDRS": "10.20.0.0/33"]) }
        #expect(error?.problems.map(\.variable) == ["PAYHOOK_CALLBACK_ALLOWED_CIDRS"])
    }

    @Test("a callback_url resolving to loopback, metadata or private addresses is refused at registration, naming callback_url; allow-listed it is accepted")
    func refusedAtRegistration() async throws {
        let harness = try await FulfillmentHarness.make("callback_dest_register")
        defer { harness.endpoint.stop() }
        let service = OrderService(pool: harness.pool, trigger: FulfillmentTrigger(queue: harness.queue(), settings: harness.settings))
        let refused = ["http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://[::1]:9/hook",
                       "http://169.254.169.254/latest/meta-data/", "https://10.0.0.5/hook", "http://[::ffff:127.0.0.1]/hook"]
        for (index, url) in refused.enumerated() {
            let registration = try #require(Self.registration("order-cb-\(index)", callbackURL: url))
            do {
                _ = try await service.register(registration)
                Issue.record("\(url) was accepted")
            } catch {
                #expect(error.field == "callback_url" && error.code == .invalidArgument, "\(url): \(error)")
            }
        }
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM orders") == 0)

        let allowing = OrderService(pool: harness.pool, trigger: FulfillmentTrigger(queue: harness.queue(), settings: try Self.loopbackAllowed()))
        let accepted = try await allowing.register(try #require(Self.registration("order-cb-ok", callbackURL: "http://127.0.0.1:9/hook")))
        #expect(accepted.created && accepted.order.callbackURL == "http://127.0.0.1:9/hook")
    }

    @Test("the callback_url is checked again before delivery: refused there, nothing is sent, the order's fulfillment fails with the reason and a dead letter")
    func refusedAtDelivery() async throws {
        // Registered while loopback was allowed; delivered by a worker whose policy refuses it.
        let harness = try await FulfillmentHarness.make("callback_dest_deliver")
        defer { harness.endpoint.stop() }
        let service = OrderService(pool: harness.pool, trigger: FulfillmentTrigger(queue: harness.queue(), settings: try Self.loopbackAllowed()))
        // Not PAYHOOK_FULFILLMENT_URL itself (the harness's endpoint.url), which is trusted as configured.
        let own = harness.endpoint.url + "?order=late"
        let order = try await service.register(try #require(Self.registration("order-cb-late", callbackURL: own))).order
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP-CB-LATE", reference: "order-cb-late", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "failed"))
        #expect(harness.endpoint.received.isEmpty)
        let failed = try await harness.order(order.id)
        #expect(failed.reviewReason?.hasPrefix("callback_url_refused") == true, "\(failed.reviewReason ?? "")")
        #expect(failed.callbacks.map(\.status) == ["failed"])
        #expect(try await harness.processing.scalar(
            "SELECT count(*) AS n FROM dead_letters WHERE status = 'open' AND reason = 'callback_url_refused'") == 1)
    }

    @Test("with its network allow-listed, an order's own loopback callback_url is delivered")
    func allowedAtDelivery() async throws {
        let harness = try await FulfillmentHarness.make("callback_dest_allowed", settings: try Self.loopbackAllowed())
        defer { harness.endpoint.stop() }
        let own = harness.endpoint.url + "?order=own"
        let service = OrderService(pool: harness.pool, trigger: FulfillmentTrigger(queue: harness.queue(), settings: harness.settings))
        let order = try await service.register(try #require(Self.registration("order-cb-own", callbackURL: own))).order
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSP-CB-OWN", reference: "order-cb-own", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        #expect(harness.endpoint.received.count == 1)
    }

    @Test("the delivery connects to the checked address: curl's resolve entry pins the URL's host and port to it")
    func resolveEntry() throws {
        func entry(_ url: String, _ address: String?) throws -> String? {
            CurlTransfer.resolveEntry(HTTPClientRequest(method: "POST", url: try #require(URL(string: url)), connectAddress: address))
        }
        #expect(try entry("https://merchant.example/hooks", "203.0.113.7") == "merchant.example:443:203.0.113.7")
        #expect(try entry("http://merchant.example:8080/hooks", "2001:db8::7") == "merchant.example:8080:[2001:db8::7]")
        #expect(try entry("http://merchant.example/hooks", "203.0.113.7") == "merchant.example:80:203.0.113.7")
        #expect(try entry("https://merchant.example/hooks", nil) == nil)
        #expect(try entry("https://merchant.example/hooks", "203.0.113.7\r\nX: y") == nil)
    }
}
