import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookOperations
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookProcessing

/// The provider sweep: what payhook does about webhooks it never received. Mercado Pago and PXP
/// are asked through the in-repo emulator over real HTTP (their documented shapes, sources in
/// docs/providers.md and `ProviderEmulator+Demo`); Adyen has no payment lookup and is raised
/// for a person instead.
@Suite("Provider sweep: what providers never send", .timeLimit(.minutes(5)))
struct ProviderSweepTests {
    struct Setup {
        let harness: ProcessingHarness
        let emulator: ProviderEmulator
        let processor: InboundEventProcessor
        let metrics = MetricsRegistry()

        func sweep(_ settings: ProviderSweepSettings = ProviderSweepSettings(),
                   fulfillment: FulfillmentSettings = FulfillmentSettings()) -> ProviderSweep {
            ProviderSweep(pool: harness.pool, settings: settings, fulfillment: fulfillment,
                          queue: JobQueue(pool: harness.pool), metrics: metrics, logger: .silent)
        }

        /// Registers an order as `POST /v1/orders` does.
        func register(_ body: String) async throws -> OrderRecord {
            let service = OrderService(pool: harness.pool, trigger: FulfillmentTrigger(
                queue: JobQueue(pool: harness.pool), settings: FulfillmentSettings()))
            return try await service.register(try OrderRegistration.parse(Array(body.utf8))).order
        }

        func sweepLookups() async throws -> Int64 {
            try await harness.scalar("SELECT count(*) AS n FROM inbound_events WHERE event_type = 'payhook.sweep'")
        }
    }

    static func setUp(_ label: String) async throws -> Setup {
        let harness = try await ProcessingHarness.make(label)
        let emulator = try ProviderEmulator()
        try emulator.start()
        emulator.seedDemoResources()
        let credentials = emulator.configuration
        let http = CurlHTTPClient(maxConcurrent: 8)
        let clients = PaymentProviderClients([
            MercadoPagoAPIClient(baseURL: emulator.baseURL(for: .mercadopago), accessToken: credentials.mercadoPagoAccessToken,
                                 http: http, timeout: .seconds(5)),
            PXPAPIClient(baseURL: emulator.baseURL(for: .pxp), clientID: credentials.pxpClientID, tokenID: credentials.pxpTokenID,
                         tokenValue: credentials.pxpTokenValue, merchant: credentials.pxpMerchant, site: credentials.pxpSite,
                         http: http, timeout: .seconds(5)),
        ])
        var settings = ProcessorSettings()
        settings.maxAttempts = 2
        let clock = harness.clock
        let processor = InboundEventProcessor(
            pool: harness.pool, conninfo: harness.database.url, clients: clients,
            hooks: .fulfillment(FulfillmentSettings(), pool: harness.pool).then(.subscriptions), settings: settings,
            logger: .silent, now: { clock.now }, jitter: { 0.5 })
        return Setup(harness: harness, emulator: emulator, processor: processor)
    }

    /// A PXP transaction in the shape `GET /transactions/{merchant}/{site}` answers (the emulator's
    /// demo transaction, `ProviderEmulator+Demo`), in `state`.
    static func pxpTransaction(_ id: String, state: String, merchant: String, site: String) -> [UInt8] {
        Array("""
            {"systemTransactionId":"\(id)","state":"\(state)","stateMessage":"Transaction \(state)",\
            "transactionMethod":{"intent":"Authorisation","fundingType":"Card","entryType":"Ecom"},\
            "merchant":"\(merchant)","site":"\(site)","merchantTransactionId":"order-\(id)",\
            "merchantTransactionDate":"2025-05-20T08:51:02.826Z","amounts":{"transactionValue":100.10,"currencyCode":"EUR"},\
            "shopper":{"id":"Shopper_01"}}
            """.utf8)
    }

    @Test("a registered Mercado Pago order whose webhook was lost is looked up at its deadline and settled")
    func mercadoPagoOrderSettledBySweep() async throws {
        let setup = try await Self.setUp("sweep_mp")
        defer { setup.emulator.stop() }
        let orderID = ProviderEmulator.Demo.mercadoPagoOrderID
        let order = try await setup.register("""
            {"provider":"mercadopago","merchant_reference":"sub-42-cycle-7","provider_order_id":"\(orderID)",
             "amount":{"value":10010,"currency":"BRL"}}
            """)
        let sweep = setup.sweep()

        // Before the deadline nothing is asked.
        #expect(try await sweep.sweep(now: Date().addingTimeInterval(3_600)).lookups.isEmpty)
        #expect(setup.emulator.mercadoPago.callCount(.order, id: orderID) == 0)

        let late = Date().addingTimeInterval(25 * 3_600)
        let first = try await sweep.sweep(now: late)
        #expect(first.lookups == ["mercadopago": 1])
        #expect(first.expired == 0)
        // The lookup waits for a processor: the order is not expired in the meantime.
        #expect(try await sweep.sweep(now: late.addingTimeInterval(60)).expired == 0)

        // The lookup is due by the database's clock; the processor's hand-moved clock catches up.
        setup.harness.clock.advance(by: 60)
        let outcome = try await setup.harness.drain(setup.processor)
        #expect(outcome.processed == 1)
        #expect(setup.emulator.mercadoPago.callCount(.order, id: orderID) == 1)
        #expect(try await setup.harness.payment(.mercadopago, "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4")?.status == "captured")
        #expect(try await setup.harness.scalar(
            "SELECT count(*) AS n FROM payments WHERE order_id = $1 AND status = 'captured'", [.int(order.id)]) == 1)
        // Settled through the normal path: fulfillment is queued as for a webhook.
        #expect(try await setup.harness.scalar(
            "SELECT count(*) AS n FROM jobs WHERE kind = 'fulfill_order' AND unique_key = $1",
            [.text("fulfill_order:\(order.id)")]) == 1)
        #expect(try await setup.harness.scalar(
            "SELECT count(*) AS n FROM payment_events WHERE data->>'note' = 'sweep_lookup=order'") >= 1)

        // Paid now: later sweeps neither ask again nor expire it.
        let after = try await sweep.sweep(now: late.addingTimeInterval(7 * 86_400))
        #expect(after.lookups.isEmpty)
        #expect(after.expired == 0)
        #expect(try await setup.sweepLookups() == 1)
    }

    @Test("a PXP transaction stuck pending after a lost webhook is looked up and applied as PXP now reports it")
    func pxpPaymentSettledBySweep() async throws {
        let setup = try await Self.setUp("sweep_pxp")
        defer { setup.emulator.stop() }
        let credentials = setup.emulator.configuration
        let id = "5c0a7e9b-1f0e-4c52-9d55-3b4a3f1c2d11"
        setup.emulator.pxp.putTransaction(id: id, json: Self.pxpTransaction(
            id, state: "Pending", merchant: credentials.pxpMerchant, site: credentials.pxpSite))
        try await setup.harness.insert(.pxp, Bodies.pxpTransaction(id, state: "Pending"))
        try await setup.harness.drain(setup.processor)
        #expect(try await setup.harness.payment(.pxp, id)?.status == "pending")

        // PXP captured it, and its webhook never arrived (PXP retries for about ten seconds).
        setup.emulator.pxp.putTransaction(id: id, json: Self.pxpTransaction(
            id, state: "Captured", merchant: credentials.pxpMerchant, site: credentials.pxpSite))
        let sweep = setup.sweep()
        #expect(try await sweep.sweep(now: Date().addingTimeInterval(600)).lookups.isEmpty)
        let stuck = try await sweep.sweep(now: Date().addingTimeInterval(2 * 3_600))
        #expect(stuck.lookups == ["pxp": 1])
        #expect(stuck.raised == 0)
        setup.harness.clock.advance(by: 60)
        #expect(try await setup.harness.drain(setup.processor).processed == 1)
        #expect(try await setup.harness.payment(.pxp, id)?.status == "captured")
        // Settled: nothing left to ask.
        #expect(try await sweep.sweep(now: Date().addingTimeInterval(30 * 86_400)).lookups.isEmpty)
    }

    @Test("an Adyen authorisation past its lifetime is raised for a person, not looked up or guessed")
    func adyenRaisedNotGuessed() async throws {
        let setup = try await Self.setUp("sweep_adyen")
        defer { setup.emulator.stop() }
        try await setup.harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(
            psp: "ADY-STUCK-1", code: "AUTHORISATION", value: 4_000, reference: "order-stuck-1")))
        try await setup.harness.drain(setup.processor)
        #expect(try await setup.harness.payment(.adyen, "ADY-STUCK-1")?.status == "authorized")

        let sweep = setup.sweep()
        #expect(try await sweep.sweep(now: Date().addingTimeInterval(86_400)).raised == 0)
        let late = Date().addingTimeInterval(8 * 86_400)
        let outcome = try await sweep.sweep(now: late)
        #expect(outcome.raised == 1)
        #expect(outcome.lookups.isEmpty)
        #expect(try await setup.sweepLookups() == 0)
        // Nothing about the payment changed: the sweep does not decide what Adyen did.
        #expect(try await setup.harness.payment(.adyen, "ADY-STUCK-1")?.status == "authorized")
        let waiting = try await ProviderSweep.waiting(limit: 50, on: setup.harness.pool)
        #expect(waiting.map(\.providerReference) == ["ADY-STUCK-1"])
        #expect(waiting.first?.subject == "payment")
        #expect(waiting.first?.reason == "authorized_unchanged")
        #expect(setup.metrics.renderPrometheus().contains(#"payhook_sweep_waiting_on_provider{provider="adyen"} 1"#))
        #expect(setup.metrics.counterValue("payhook_sweep_raised_total") == 1)
        // Raised once per recheck, not every round.
        #expect(try await sweep.sweep(now: late.addingTimeInterval(60)).raised == 0)

        // The capture arrives after all: the case leaves the list and the gauge.
        try await setup.harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(
            psp: "CAP-ADY-STUCK-1", original: "ADY-STUCK-1", code: "CAPTURE", value: 4_000, reference: "order-stuck-1")))
        try await setup.harness.drain(setup.processor)
        #expect(try await ProviderSweep.waiting(limit: 50, on: setup.harness.pool).isEmpty)
        try await sweep.sweep(now: late.addingTimeInterval(120))
        #expect(setup.metrics.renderPrometheus().contains(#"payhook_sweep_waiting_on_provider{provider="adyen"} 0"#))
    }

    @Test("two sweepers at once handle each stuck payment once")
    func concurrentSweepersDoEachOnce() async throws {
        let setup = try await Self.setUp("sweep_two")
        defer { setup.emulator.stop() }
        try await setup.harness.pool.query("""
            INSERT INTO payments (provider, provider_payment_id, status)
            SELECT 'pxp', 'stuck-' || g, 'pending' FROM generate_series(1, 40) g
            UNION ALL SELECT 'adyen', 'ADY-' || g, 'pending' FROM generate_series(1, 10) g
            """)
        let secondPool = PostgresPool(conninfo: setup.harness.database.url, maxConnections: 2)
        let first = setup.sweep()
        let second = ProviderSweep(pool: secondPool, settings: ProviderSweepSettings(), fulfillment: FulfillmentSettings(),
                                   queue: JobQueue(pool: secondPool), metrics: nil, logger: .silent)
        let late = Date().addingTimeInterval(2 * 3_600)
        var lookups = 0
        var raised = 0
        for round in 0..<5 {
            let now = late.addingTimeInterval(Double(round))
            async let a = first.sweep(now: now)
            async let b = second.sweep(now: now)
            for outcome in try await [a, b] {
                lookups += outcome.lookups.values.reduce(0, +)
                raised += outcome.raised
            }
        }
        await secondPool.close()
        #expect(lookups == 40)
        #expect(raised == 10)
        #expect(try await setup.sweepLookups() == 40)
        #expect(try await setup.harness.scalar("SELECT count(*) AS n FROM sweep_checks WHERE checks <> 1") == 0)
        #expect(try await setup.harness.scalar("SELECT count(*) AS n FROM sweep_checks") == 50)
    }

    @Test("an order that expires unpaid is reported to the merchant only when they opted in")
    func expiredOrderCallbackOnlyWhenOptedIn() async throws {
        let harness = try await FulfillmentHarness.make("sweep_expired")
        defer { harness.endpoint.stop() }
        let quiet = try await harness.register("""
            {"provider":"adyen","merchant_reference":"exp-quiet","amount":{"value":2500,"currency":"EUR"}}
            """)
        let late = Date().addingTimeInterval(25 * 3_600)
        let silentSweep = ProviderSweep(pool: harness.pool, settings: ProviderSweepSettings(), fulfillment: harness.settings,
                                        queue: harness.queue(), metrics: nil, logger: .silent)
        #expect(try await silentSweep.sweep(now: Date().addingTimeInterval(3_600)).expired == 0)
        #expect(try await silentSweep.sweep(now: late).expired == 1)
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM orders WHERE expired_at IS NOT NULL AND id = $1",
                                                    [.int(quiet.id)]) == 1)
        #expect(try await harness.processing.scalar("SELECT count(*) AS n FROM merchant_callbacks") == 0)

        let loud = try await harness.register("""
            {"provider":"adyen","merchant_reference":"exp-loud","amount":{"value":2500,"currency":"EUR"}}
            """)
        var optedIn = ProviderSweepSettings()
        optedIn.notifyOrderExpired = true
        let sweep = ProviderSweep(pool: harness.pool, settings: optedIn, fulfillment: harness.settings,
                                  queue: harness.queue(), metrics: nil, logger: .silent)
        #expect(try await sweep.sweep(now: late.addingTimeInterval(60)).expired == 1)
        // Expired once: a later round sends nothing more.
        #expect(try await sweep.sweep(now: late.addingTimeInterval(120)).expired == 0)
        let (worker, task) = try harness.startWorker(name: "w")
        let told = await eventually(timeout: .seconds(60)) { !harness.endpoint.received.isEmpty }
        #expect(await harness.quietQueue())
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value

        #expect(told)
        let received = harness.endpoint.received
        #expect(received.count == 1)
        let body = try #require(received.first.map { String(decoding: $0.body, as: UTF8.self) })
        #expect(body.contains(#""type":"order.expired""#))
        #expect(body.contains(#""merchant_reference":"exp-loud""#))
        #expect(!body.contains("exp-quiet"))
        // The fact key, then the restore-safe random part (MerchantCallbackOutbox.webhookID).
        let webhookID = try #require(received.first?.header("webhook-id"))
        #expect(webhookID.hasPrefix("order.expired.\(loud.id)."), "\(webhookID)")
    }

    @Test("the console lists what waits on the provider, and drops it once its status moves")
    func consoleListsWaiting() async throws {
        try await ConsoleHarness.with("sweep_console") { console in
            let database = console.database
            try await database.query("""
                INSERT INTO payments (provider, provider_payment_id, status) VALUES ('adyen', 'ADY-<b>WAIT</b>', 'pending'),
                    ('adyen', 'ADY-MOVED', 'pending')
                """)
            let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
            let sweep = ProviderSweep(pool: pool, settings: ProviderSweepSettings(), fulfillment: FulfillmentSettings(),
                                      queue: JobQueue(pool: pool), metrics: nil, logger: .silent)
            #expect(try await sweep.sweep(now: Date().addingTimeInterval(2 * 3_600)).raised == 2)
            try await database.query("UPDATE payments SET status = 'captured' WHERE provider_payment_id = 'ADY-MOVED'")
            await pool.close()

            let (cookie, _) = try await console.signIn()
            let page = try await console.send("GET", "/console/waiting", cookie: cookie)
            #expect(page.status == 200)
            #expect(page.text.contains("Waiting on the provider"))
            #expect(page.text.contains("ADY-&lt;b&gt;WAIT&lt;/b&gt;"))
            #expect(!page.text.contains("ADY-<b>WAIT</b>"))
            #expect(page.text.contains("pending_unchanged"))
            #expect(!page.text.contains("ADY-MOVED"))
            #expect(try await console.send("GET", "/console/waiting").status != 200)
        }
    }

    @Test("charges still pending after their own re-checks: PXP's is looked up and applied, Adyen's raised")
    func pendingCharges() async throws {
        let setup = try await Self.setUp("sweep_charges")
        defer { setup.emulator.stop() }
        let credentials = setup.emulator.configuration
        let transaction = "9b1d3c55-0e0f-4d0a-8a41-2c6f0a7d5e10"
        setup.emulator.pxp.putTransaction(id: transaction, json: Self.pxpTransaction(
            transaction, state: "Captured", merchant: credentials.pxpMerchant, site: credentials.pxpSite))
        try await setup.harness.pool.query("""
            WITH token AS (INSERT INTO vault_tokens (provider, token) VALUES ('pxp', 'tok-1') RETURNING id),
                 sub AS (INSERT INTO subscriptions (vault_token_id, reference, amount_minor, currency, interval, start_at, next_charge_at)
                         SELECT id, 'sub-sweep', 10010, 'EUR', '{"unit":"month","count":1}', now(), now() FROM token RETURNING id)
            INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, status, provider,
                                 provider_payment_id, attempted_at)
            SELECT sub.id, c.cycle, 1, 'key-' || c.cycle, 10010, 'EUR', 'pending', c.provider, c.payment, c.attempted
            FROM sub, (VALUES (1, 'pxp', '\(transaction)', now() - interval '2 days'),
                              (2, 'adyen', 'ADY-CHARGE-2', now() - interval '2 days'),
                              (3, 'pxp', 'recent-3', now())) AS c(cycle, provider, payment, attempted)
            """)
        let outcome = try await setup.sweep().sweep(now: Date().addingTimeInterval(3_600))
        #expect(outcome.lookups == ["pxp": 1])
        #expect(outcome.raised == 1)
        let body = try #require(try await setup.harness.text(
            "SELECT convert_from(body, 'UTF8') AS v FROM inbound_events WHERE event_type = 'payhook.sweep'"))
        #expect(ProviderLookupRequest(body: Array(body.utf8)) == ProviderLookupRequest(resource: .payment, id: transaction))
        setup.harness.clock.advance(by: 60)
        #expect(try await setup.harness.drain(setup.processor).processed == 1)
        #expect(try await setup.harness.payment(.pxp, transaction)?.status == "captured")
        let waiting = try await ProviderSweep.waiting(limit: 10, on: setup.harness.pool)
        #expect(waiting.map(\.subject) == ["charge"])
        #expect(waiting.map(\.providerReference) == ["ADY-CHARGE-2"])
        #expect(waiting.map(\.reason) == ["charge_pending_past_checks"])
    }

    @Test("serve runs the sweep under the scheduler role only")
    func serveRunsSweepWithScheduler() async throws {
        try await ConsoleHarness.with("sweep_serve", roles: [.scheduler]) { console in
            #expect(console.server.services.map(\.serviceName).contains("provider sweep"))
            // The first round runs at start and sets the gauge, zero included.
            #expect(await eventually(timeout: .seconds(20)) {
                console.server.metrics.renderPrometheus().contains(#"payhook_sweep_waiting_on_provider{provider="adyen"} 0"#)
            })
        }
        try await ConsoleHarness.with("sweep_serve_ingress", roles: [.ingress]) { console in
            #expect(!console.server.services.map(\.serviceName).contains("provider sweep"))
        }
    }

    @Test("a lookup body round-trips; provider deliveries and malformed pointers are not lookups")
    func lookupBody() {
        let request = ProviderLookupRequest(resource: .order, id: "ORD\"1")
        #expect(ProviderLookupRequest(body: request.body) == request)
        #expect(ProviderLookupRequest(body: Array(Bodies.mercadoPago(type: "order", action: "order.processed", id: "ORD1", notification: 1).utf8)) == nil)
        #expect(ProviderLookupRequest(body: Array(#"{"payhook_lookup":{"resource":"refund","id":"1"}}"#.utf8)) == nil)
        #expect(ProviderLookupRequest(body: Array(#"{"payhook_lookup":{"resource":"order","id":""}}"#.utf8)) == nil)
        #expect(ProviderLookupRequest(body: Array(#" {"payhook_lookup":{"resource":"order","id":"1"}}"#.utf8)) == nil)
    }
}
