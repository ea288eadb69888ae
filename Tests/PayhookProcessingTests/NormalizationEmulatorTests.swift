import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import PayhookProviders
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing

/// Processing with the real HTTP clients against the in-repo provider emulator: what the other
/// normalization suites check with in-memory fakes, here across real HTTP, credentials and faults.
@Suite("Normalization through the provider emulator", .timeLimit(.minutes(5)))
struct NormalizationEmulatorTests {
    struct Setup {
        let harness: ProcessingHarness
        let emulator: ProviderEmulator
        let processor: InboundEventProcessor
    }

    static func setUp(_ label: String, clientTimeout: Duration = .seconds(5)) async throws -> Setup {
        let harness = try await ProcessingHarness.make(label)
        let emulator = try ProviderEmulator()
        try emulator.start()
        emulator.seedDemoResources()
        let credentials = emulator.configuration
        let http = CurlHTTPClient(maxConcurrent: 8)
        let clients = PaymentProviderClients([
            MercadoPagoAPIClient(baseURL: emulator.baseURL(for: .mercadopago), accessToken: credentials.mercadoPagoAccessToken,
                                 http: http, timeout: clientTimeout),
            PXPAPIClient(baseURL: emulator.baseURL(for: .pxp), clientID: credentials.pxpClientID, tokenID: credentials.pxpTokenID,
                         tokenValue: credentials.pxpTokenValue, merchant: credentials.pxpMerchant, site: credentials.pxpSite,
                         http: http, timeout: clientTimeout),
        ])
        var settings = ProcessorSettings()
        settings.maxAttempts = 3
        let clock = harness.clock
        let processor = InboundEventProcessor(
            pool: harness.pool, conninfo: harness.database.url, clients: clients,
            hooks: .fulfillment(FulfillmentSettings(), pool: harness.pool).then(.subscriptions), settings: settings,
            logger: .silent, now: { clock.now }, jitter: { 0.5 })
        return Setup(harness: harness, emulator: emulator, processor: processor)
    }

    static let paymentID = ProviderEmulator.Demo.mercadoPagoPaymentID
    static let transactionID = ProviderEmulator.Demo.pxpTransactionID

    @Test("thin Mercado Pago and PXP webhooks are completed from the provider's API and stored")
    func fetchesThroughHTTP() async throws {
        let setup = try await Self.setUp("emu_fetch")
        defer { setup.emulator.stop() }
        let harness = setup.harness
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: Self.paymentID, notification: 1))
        try await harness.insert(.pxp, Bodies.pxpTransaction(Self.transactionID, state: "Authorised"))
        let outcome = try await harness.drain(setup.processor)
        #expect(outcome.processed == 2)
        #expect(outcome.dead == 0)
        // What the emulator holds is what the stored rows say (the webhook's own state is not trusted).
        #expect(try await harness.payment(.mercadopago, Self.paymentID)?.status == "captured")
        #expect(try await harness.payment(.pxp, Self.transactionID)?.status == "captured")
        #expect(setup.emulator.mercadoPago.callCount(.payment, id: Self.paymentID) == 1)
    }

    @Test("a 503 and then a timeout from the provider are retried with backoff, then the event is processed")
    func retriesProviderFailures() async throws {
        // The client's deadline is generous next to a loaded test machine's answer times, and
        // the emulated stall is longer still, so only the armed fault can time out.
        let setup = try await Self.setUp("emu_retry", clientTimeout: .seconds(2))
        defer { setup.emulator.stop() }
        let harness = setup.harness
        setup.emulator.mercadoPago.fail(next: 1, with: .status(503), on: .payment, id: Self.paymentID)
        setup.emulator.mercadoPago.fail(next: 1, with: .timeout(after: .seconds(5)), on: .payment, id: Self.paymentID)
        let id = try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: Self.paymentID, notification: 2))

        #expect(try await harness.drain(setup.processor).retried == 1)
        #expect(try await harness.inbound(id).status == "pending")
        harness.clock.advance(by: 3600)
        #expect(try await harness.drain(setup.processor).retried == 1)
        let afterTimeout = try await harness.inbound(id)
        #expect(afterTimeout.lastError?.contains("timeout") == true, "last error: \(afterTimeout.lastError ?? "none")")
        harness.clock.advance(by: 3600)
        #expect(try await harness.drain(setup.processor).processed == 1)
        let inbound = try await harness.inbound(id)
        #expect(inbound.status == "processed")
        #expect(inbound.attempts == 3)
        #expect(try await harness.payment(.mercadopago, Self.paymentID)?.status == "captured")
    }

    @Test("a payment the provider does not know is dead-lettered at once with a clear reason")
    func notFoundIsDeadLettered() async throws {
        let setup = try await Self.setUp("emu_404")
        defer { setup.emulator.stop() }
        let harness = setup.harness
        let id = try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "payment", action: "payment.updated", id: "999000111", notification: 3))
        #expect(try await harness.drain(setup.processor).dead == 1)
        #expect(try await harness.inbound(id).status == "dead")
        #expect(try await harness.text("SELECT reason AS v FROM dead_letters WHERE source_id = $1", [.int(id)]) == "not_found_at_provider")
    }
}

@Suite("Mercado Pago first payment reference", .timeLimit(.minutes(5)))
struct MercadoPagoFirstPaymentTests {
    @Test("processing the order that registered a card stores its payment id on the vault token, once")
    func storesFirstPayment() async throws {
        let setup = try await NormalizationEmulatorTests.setUp("emu_first_payment")
        defer { setup.emulator.stop() }
        let harness = setup.harness
        let orderID = ProviderEmulator.Demo.mercadoPagoOrderID
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: orderID, notification: 1))
        #expect(try await harness.drain(setup.processor).processed == 1)
        #expect(try await harness.text("SELECT first_payment_reference AS v FROM vault_tokens WHERE token = '9120384756'")
                == "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4")

        // A later order paid with the same card leaves the first payment in place.
        let later = String(decoding: try #require(setup.emulator.mercadoPago.order(id: orderID)), as: UTF8.self)
            .replacingOccurrences(of: orderID, with: "ORD-LATER").replacingOccurrences(of: "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4", with: "PAY-LATER")
        setup.emulator.mercadoPago.putOrder(id: "ORD-LATER", json: later)
        try await harness.insert(.mercadopago, Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORD-LATER", notification: 2))
        #expect(try await harness.drain(setup.processor).processed == 1)
        #expect(try await harness.text("SELECT first_payment_reference AS v FROM vault_tokens WHERE token = '9120384756'")
                == "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4")
    }
}
