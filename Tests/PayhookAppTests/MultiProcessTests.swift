import Foundation
import PayhookCore
import PayhookEmulator
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// Invariant 8 on the real binary: any number of payhook processes share one database. Three
/// `payhook serve` processes (every role) take a mixed stream round-robin, one of them is killed
/// (-9) mid-stream and restarted, and afterwards the money is exactly right.
@Suite("Many processes, one database", .timeLimit(.minutes(5)))
struct MultiProcessTests {
    @Test("three serve processes, one killed -9 mid-stream and restarted: every acknowledged delivery processed once, every status right, one order.paid per order, one charge per cycle")
    func threeProcessesOneKilled() async throws {
        let database = try await TestDatabase.migrated("multi_process")
        let emulator = try ProviderEmulator()
        try emulator.start()
        defer { emulator.stop() }
        // Slow answers keep charges and callbacks in flight long enough for the kill to catch one.
        emulator.setChargeLatency(.seconds(1))
        let endpoint = try MerchantEndpoint(delay: .milliseconds(300))
        defer { endpoint.stop() }
        let children = Children()
        // Whatever happens below, no child outlives the test.
        defer { children.killAll() }
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        defer { Task { await pool.close() } }

        var random = SplitMix64(seed: 23)
        let world = MultiProcessWorld(emulator: emulator)
        let stream = world.stream(using: &random)
        let orders = try await world.registerOrders(pool: pool)
        let subscriptions = try await world.seedSubscriptions(pool: pool)

        var environment = ChargeCrashTests.environment(database, emulator)
        environment["PAYHOOK_FULFILLMENT_URL"] = endpoint.url
        environment["PAYHOOK_FULFILLMENT_SECRET"] = FulfillmentHarness.secret
        let started = try await children.serveAll(3, databaseURL: database.url, environment: environment)
        let sender = StreamSender(steps: stream, ports: started.map(\.port))

        // Phase 1: all three take deliveries. Then one dies with work in flight (processing
        // lags the acknowledgements; jobs and charges run), and phase 2 keeps sending to its
        // port too: those sends fail and go to the next process, as a provider retries.
        let killAt = stream.count * 2 / 5, restartAt = stream.count * 7 / 10
        await sender.send(0..<killAt)
        let victim = started[1].child
        // Preferably while it holds a job (a charge the provider is still answering, a callback
        // the merchant is still holding): then a rescue must hand that job on. The checks below
        // hold either way, so this wait only makes the harder case likely.
        _ = await eventually(timeout: .seconds(10)) {
            (try? await database.int("SELECT count(*) AS n FROM jobs WHERE state = 'running' AND locked_by LIKE $1",
                                     [.text("%:\(victim.pid):%")])) ?? 0 > 0
        }
        victim.send(signal: SIGKILL)
        let killed = await victim.wait()
        let failedBeforeKill = sender.failedAttempts
        await sender.send(killAt..<restartAt)
        let failedWhileDown = sender.failedAttempts - failedBeforeKill
        let restarted = try await children.serve(databaseURL: database.url, environment: environment)
        sender.replacePort(slot: 1, with: restarted.port)
        await sender.send(restartAt..<stream.count)

        #expect(killed == .signaled(SIGKILL))
        #expect(failedWhileDown > 0, "no send hit the killed process's port")
        let unacknowledged = sender.unacknowledged
        try #require(unacknowledged.isEmpty, "deliveries no process acknowledged: \(unacknowledged.prefix(5))")
        let acknowledged = sender.acknowledgedKeys

        // Quiescence: everything the stream and the subscriptions owe is done.
        var missing: [String] = []
        let quiet = await eventually(timeout: .seconds(45)) {
            missing = (try? await world.outstanding(pool: pool, acknowledged: acknowledged, orders: orders,
                                                    subscriptions: subscriptions, endpoint: endpoint)) ?? ["database unreadable"]
            return missing.isEmpty
        }
        let running = children.running
        for child in running { child.send(signal: SIGTERM) }
        var endings: [Termination?] = []
        for child in running { endings.append(await child.wait(timeout: .seconds(30))) }
        #expect(quiet, """
            not settled within 45 s after the stream: \(missing.joined(separator: "; ")); \
            stderr: \(running.map { $0.standardError.suffix(600) })
            """)
        #expect(endings.allSatisfy { $0 == .exited(0) }, "the survivors did not exit 0 on SIGTERM: \(endings)")

        // Every acknowledged delivery is stored once and processed once: one history row per
        // canonical event it carried, never two.
        let processed = Set(try await pool.query("SELECT dedup_key FROM inbound_events WHERE status = 'processed'").rows
            .map { try $0.decode("dedup_key", as: String.self) })
        let notProcessed = Set(acknowledged).subtracting(processed)
        #expect(notProcessed.isEmpty, "\(notProcessed.count) acknowledged deliveries not processed: \(notProcessed.prefix(5))")
        let twice = try await pool.query("""
            SELECT inbound_event_id, type, count(*) AS n FROM payment_events WHERE inbound_event_id IS NOT NULL
            GROUP BY inbound_event_id, type, payment_id, order_id HAVING count(*) > 1
            """).rows.map {
                "inbound event \(try $0.decode("inbound_event_id", as: Int64.self)) \(try $0.decode("type", as: String.self)) × \(try $0.decode("n", as: Int64.self))"
            }
        #expect(twice.isEmpty, "\(twice.count) deliveries applied more than once: \(twice.prefix(5))")

        // Every payment ends where its lifecycle ended, whatever the order and repetition.
        let wrong = try await world.wrongStatuses(pool: pool)
        #expect(wrong.isEmpty, "\(wrong)")

        // One order.paid per order. A callback in flight when its process died may reach the
        // merchant twice, with the same webhook-id: only a job rescued from that process may.
        let callbacks = try await pool.query("""
            SELECT order_id, count(*) AS n FROM merchant_callbacks WHERE type = 'order.paid' GROUP BY order_id
            """).rows.map { (try $0.decode("order_id", as: Int64.self), try $0.decode("n", as: Int64.self)) }
        #expect(callbacks.count == orders.count && callbacks.allSatisfy { $0.1 == 1 }, "order.paid rows: \(callbacks)")
        let rescued = Set(try await pool.query("""
            SELECT m.fact_key AS id FROM jobs j JOIN merchant_callbacks m ON m.id = (j.payload->>'callback_id')::bigint
            WHERE j.kind = 'merchant_callback' AND j.errors::text LIKE '%lease expired%'
            """).rows.map { try $0.decode("id", as: String.self) })
        let received = Dictionary(grouping: endpoint.received.compactMap { $0.header("webhook-id").map(RestoreSafeIDs.factKey) }.filter { $0.hasPrefix("order.paid.") },
                                  by: { $0 }).mapValues(\.count)
        for order in orders {
            let id = FulfillOrderHandler.paidWebhookID(orderID: order)
            let count = received[id] ?? 0
            #expect(count == 1 || (count == 2 && rescued.contains(id)), "\(id) reached the merchant \(count) times")
        }

        // One executed charge per subscription cycle at the provider, and one success here.
        var executedPerCycle: [String: Int] = [:]
        for provider in ProviderID.allCases {
            for charge in emulator.executed(provider) {
                guard let key = charge.idempotencyKey.map(RestoreSafeIDs.keyStem), let attempt = key.range(of: "-a", options: .backwards) else { continue }
                executedPerCycle[String(key[..<attempt.lowerBound]), default: 0] += 1
            }
        }
        let namespace = try #require(try await database.string("SELECT key_namespace AS v FROM installation"))
        let expectedCycles = Set(subscriptions.map { "\(namespace)-sub-\($0)-c1" })
        #expect(Set(executedPerCycle.keys) == expectedCycles, "executed: \(executedPerCycle)")
        #expect(executedPerCycle.values.allSatisfy { $0 == 1 }, "executed: \(executedPerCycle)")
        #expect(try await database.int("SELECT count(*) AS n FROM charges") == Int64(subscriptions.count))
        #expect(try await database.int("SELECT count(*) AS n FROM charges WHERE status = 'succeeded'") == Int64(subscriptions.count))

        #expect(try await database.int("SELECT count(*) AS n FROM jobs WHERE state = 'running'") == 0)
        let letters = try await pool.query("SELECT reason, coalesce(error, '') AS error FROM dead_letters").rows
            .map { "\(try $0.decode("reason", as: String.self)): \(try $0.decode("error", as: String.self))" }
        #expect(letters.isEmpty, "unexpected dead letters: \(letters)")
    }
}

/// The payhook children one test started; kills every one still running when asked.
/// (Shared with PgBouncerServeTests.)
final class Children: Sendable {
    private let all = Mutex<[ChildProcess]>([])

    func serve(databaseURL: String, environment: [String: String]) async throws -> (child: ChildProcess, port: Int) {
        let started = try await PayhookBinary.serve(databaseURL: databaseURL, environment: environment)
        all.withLock { $0.append(started.child) }
        return started
    }

    /// Starts `count` processes at once; each is registered as soon as it reports its port, so a
    /// failure of one leaves none of the others running after the test.
    func serveAll(_ count: Int, databaseURL: String, environment: [String: String]) async throws -> [(child: ChildProcess, port: Int)] {
        try await withThrowingTaskGroup(of: (Int, ChildProcess, Int).self) { group in
            for index in 0..<count {
                group.addTask {
                    let started = try await self.serve(databaseURL: databaseURL, environment: environment)
                    return (index, started.child, started.port)
                }
            }
            var started: [(Int, ChildProcess, Int)] = []
            for try await one in group { started.append(one) }
            return started.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        }
    }

    var running: [ChildProcess] { all.withLock { $0 }.filter { $0.ended == nil } }

    func killAll() {
        for child in all.withLock({ $0 }) {
            child.send(signal: SIGKILL)
            child.removeOutputFiles()
        }
    }
}

/// One delivery of the stream, and what the provider's API holds from the moment it is sent
/// (a thin webhook's payment or transaction moving to its next state).
struct StreamStep: Sendable {
    let delivery: SignedDelivery
    let providerState: (@Sendable () -> Void)?
}

/// Sends the stream from a few threads. Delivery `i` goes to process `i % 3`; a send that gets
/// no 2xx goes to the next process, as a provider retries.
final class StreamSender: Sendable {
    static let threads = 4

    private let steps: [StreamStep]
    private let ports: Mutex<[Int]>
    private let cursor = Mutex<Range<Int>>(0..<0)
    private let acknowledged = Mutex<[String]>([])
    private let failed = Mutex<(attempts: Int, given: [String])>((0, []))

    init(steps: [StreamStep], ports: [Int]) {
        self.steps = steps
        self.ports = Mutex(ports)
    }

    var acknowledgedKeys: [String] { acknowledged.withLock { $0 } }
    var failedAttempts: Int { failed.withLock { $0.attempts } }
    var unacknowledged: [String] { failed.withLock { $0.given } }

    func replacePort(slot: Int, with port: Int) { ports.withLock { $0[slot] = port } }

    /// Sends `range` and returns when every delivery in it was answered or given up.
    func send(_ range: Range<Int>) async {
        cursor.withLock { $0 = range }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<Self.threads {
                group.addTask { await HTTPTestClient.offPool { self.drain() } }
            }
        }
    }

    /// Takes the next step; its provider state changes under the same lock, so states change in
    /// stream order whatever the thread that sends the webhook.
    private func next() -> (Int, StreamStep)? {
        cursor.withLock { range in
            guard let index = range.first else { return nil }
            range = (index + 1)..<range.upperBound
            steps[index].providerState?()
            return (index, steps[index])
        }
    }

    private func drain() {
        while let (index, step) = next() {
            let delivery = step.delivery
            var answered = false
            for attempt in 0..<30 where !answered {
                let port = ports.withLock { $0[(index + attempt) % $0.count] }
                let response = HTTPTestClient.sendBlocking(port: port, path: delivery.path, headers: delivery.headers,
                                                           body: delivery.body, timeoutSeconds: 20)
                if let response, response.isSuccess {
                    answered = true
                } else {
                    failed.withLock { $0.attempts += 1 }
                    if attempt % 3 == 2 { Thread.sleep(forTimeInterval: 0.1) }
                }
            }
            if answered {
                acknowledged.withLock { $0.append(delivery.expectedDedupKey) }
            } else {
                failed.withLock { $0.given.append(delivery.expectedDedupKey) }
            }
        }
    }
}

/// The payments, orders and subscriptions of the run, and what each must end as.
struct MultiProcessWorld: Sendable {
    let emulator: ProviderEmulator

    /// One payment of the run and the status it must end in: where its lifecycle ends at the
    /// provider, whatever the order and repetition of its deliveries.
    struct Lifecycle: Sendable {
        let provider: ProviderID
        let id: String
        let expected: String
    }

    static let adyenOrders = 12
    /// Payments of each other kind (refunded, authorized, declined; per provider): PgBouncerServeTests
    /// raises it to send hundreds of deliveries.
    var perKind = 4

    func adyenReference(_ n: Int) -> String { "mp-order-\(n)" }

    var lifecycles: [Lifecycle] {
        var all: [Lifecycle] = []
        for n in 0..<Self.adyenOrders { all.append(Lifecycle(provider: .adyen, id: "PSPPAID\(n)", expected: "captured")) }
        for n in 0..<perKind {
            all.append(Lifecycle(provider: .adyen, id: "PSPREFUND\(n)", expected: "refunded"))
            all.append(Lifecycle(provider: .adyen, id: "PSPAUTH\(n)", expected: "authorized"))
            all.append(Lifecycle(provider: .adyen, id: "PSPREFUSED\(n)", expected: "declined"))
            all.append(Lifecycle(provider: .mercadopago, id: "7700\(n)1", expected: "captured"))
            all.append(Lifecycle(provider: .mercadopago, id: "7700\(n)2", expected: "refunded"))
            all.append(Lifecycle(provider: .mercadopago, id: "7700\(n)3", expected: "pending"))
            all.append(Lifecycle(provider: .pxp, id: "tx-multi-\(n)-1", expected: "captured"))
            all.append(Lifecycle(provider: .pxp, id: "tx-multi-\(n)-2", expected: "refunded"))
            all.append(Lifecycle(provider: .pxp, id: "tx-multi-\(n)-3", expected: "authorized"))
        }
        return all
    }

    // MARK: The stream

    /// Every lifecycle's deliveries, interleaved at random. Adyen's are signed full events,
    /// so they are also reordered within a payment; Mercado Pago's and PXP's are thin (the
    /// state is fetched), so the provider's state moves forward in order and each webhook
    /// follows its move. About a quarter of the deliveries are sent again later.
    func stream(using random: inout SplitMix64) -> [StreamStep] {
        var queues: [[StreamStep]] = []
        var notification = 0
        for lifecycle in lifecycles {
            switch lifecycle.provider {
            case .adyen: queues.append(adyenSteps(lifecycle).shuffled(using: &random))
            case .mercadopago: queues.append(mercadoPagoSteps(lifecycle, notification: &notification))
            case .pxp: queues.append(pxpSteps(lifecycle))
            }
        }
        var stream: [StreamStep] = []
        while !queues.isEmpty {
            let index = Int.random(in: 0..<queues.count, using: &random)
            stream.append(queues[index].removeFirst())
            if queues[index].isEmpty { queues.remove(at: index) }
        }
        // Duplicates: the same signed delivery again, later (its provider state already set).
        for index in stream.indices.reversed() where Int.random(in: 0..<4, using: &random) == 0 {
            let copy = StreamStep(delivery: stream[index].delivery, providerState: nil)
            stream.insert(copy, at: Int.random(in: (index + 1)...stream.count, using: &random))
        }
        return stream
    }

    private func adyenSteps(_ lifecycle: Lifecycle) -> [StreamStep] {
        let n = Int(lifecycle.id.filter(\.isNumber)) ?? 0
        let paid = lifecycle.id.hasPrefix("PSPPAID")
        func item(_ code: String, psp: String, original: String? = nil, success: Bool = true) -> StreamStep {
            var item = Sign.AdyenItem()
            item.pspReference = psp
            item.originalReference = original
            item.merchantReference = paid ? adyenReference(n) : "ref-\(lifecycle.id)"
            item.value = 2500 + n
            item.eventCode = code
            item.success = success ? "true" : "false"
            return StreamStep(delivery: Sign.adyen(items: [item]), providerState: nil)
        }
        let psp = lifecycle.id
        switch lifecycle.expected {
        case "captured": return [item("AUTHORISATION", psp: psp), item("CAPTURE", psp: "CAP-\(psp)", original: psp)]
        case "refunded":
            return [item("AUTHORISATION", psp: psp), item("CAPTURE", psp: "CAP-\(psp)", original: psp),
                    item("REFUND", psp: "RF-\(psp)", original: psp)]
        case "declined": return [item("AUTHORISATION", psp: psp, success: false)]
        default: return [item("AUTHORISATION", psp: psp)]
        }
    }

    private func mercadoPagoSteps(_ lifecycle: Lifecycle, notification: inout Int) -> [StreamStep] {
        let states: [String] = switch lifecycle.expected {
        case "captured": ["pending", "approved"]
        case "refunded": ["approved", "refunded"]
        default: ["pending"]
        }
        let emulator = self.emulator
        return states.enumerated().map { step, state in
            notification += 1
            let id = lifecycle.id
            let json = Self.mercadoPagoPayment(id: id, status: state, second: step)
            let body = Bodies.mercadoPago(type: "payment", action: step == 0 ? "payment.created" : "payment.updated",
                                          id: id, notification: 9_000_000 + notification)
            var delivery = Sign.mercadoPago(dataID: id, body: Array(body.utf8))
            delivery.expectedDedupKey = "payment:\(id):\(step == 0 ? "payment.created" : "payment.updated"):\(9_000_000 + notification)"
            return StreamStep(delivery: delivery, providerState: { emulator.mercadoPago.putPayment(id: id, json: json) })
        }
    }

    private func pxpSteps(_ lifecycle: Lifecycle) -> [StreamStep] {
        let states: [String] = switch lifecycle.expected {
        case "captured": ["Authorised", "Captured"]
        case "refunded": ["Authorised", "Captured", "Refunded"]
        default: ["Authorised"]
        }
        let emulator = self.emulator
        return states.map { state in
            let id = lifecycle.id
            let json = Self.pxpTransaction(id: id, state: state, merchant: emulator.pxp.merchant, site: emulator.pxp.site)
            return StreamStep(delivery: Sign.pxp(body: Array(Bodies.pxpTransaction(id, state: state).utf8)),
                              providerState: { emulator.pxp.putTransaction(id: id, json: json) })
        }
    }

    /// A classic Mercado Pago payment as `GET /v1/payments/{id}` answers; each later state is
    /// updated a second later, so no snapshot is older than one already applied.
    static func mercadoPagoPayment(id: String, status: String, second: Int) -> String {
        """
        {"id":\(id),"date_created":"2025-03-11T08:59:58.000-04:00","date_last_updated":"2025-03-11T09:00:0\(second).000-04:00",\
        "collector_id":1873904477,"operation_type":"regular_payment","payment_method_id":"visa",\
        "payment_type_id":"credit_card","status":"\(status)","status_detail":"accredited","currency_id":"BRL",\
        "transaction_amount":40.5,"transaction_amount_refunded":\(status == "refunded" ? "40.5" : "0"),\
        "captured":\(status == "pending" ? "false" : "true"),"external_reference":"mp-ext-\(id)","payer":{"id":"payer-1"}}
        """
    }

    /// A PXP transaction as the transactions API answers.
    static func pxpTransaction(id: String, state: String, merchant: String, site: String) -> String {
        let refunded = state == "Refunded" ? ",\"refundedValue\":100.10" : ""
        return """
            {"systemTransactionId":"\(id)","state":"\(state)","stateMessage":"Transaction \(state)",\
            "transactionMethod":{"intent":"Authorisation","fundingType":"Card","entryType":"Ecom"},\
            "merchant":"\(merchant)","site":"\(site)","merchantTransactionId":"order-\(id)",\
            "merchantTransactionDate":"2025-05-20T08:51:02.826Z","amounts":{"transactionValue":100.10,"currencyCode":"EUR"\(refunded)},\
            "shopper":{"id":"Shopper_01"}}
            """
    }

    // MARK: Orders and subscriptions

    /// Registers the orders the Adyen `PSPPAID…` payments pay; returns their ids.
    func registerOrders(pool: PostgresPool) async throws -> [Int64] {
        let service = OrderService(pool: pool, trigger: FulfillmentTrigger(queue: JobQueue(pool: pool), settings: FulfillmentSettings()))
        var ids: [Int64] = []
        for n in 0..<Self.adyenOrders {
            let registration = try OrderRegistration.parse(Array("""
                {"provider": "adyen", "merchant_reference": "\(adyenReference(n))", "amount": {"value": \(2500 + n), "currency": "EUR"}}
                """.utf8))
            ids.append(try await service.register(registration).order.id)
        }
        return ids
    }

    /// Three subscriptions per provider, falling due one after another over the first seconds
    /// of the run (so the scheduler runs before, during and after the kill); returns their ids.
    func seedSubscriptions(pool: PostgresPool) async throws -> [Int64] {
        var ids: [Int64] = []
        for (index, provider) in (ProviderID.allCases + ProviderID.allCases + ProviderID.allCases).enumerated() {
            let token = try #require(try await pool.query("""
                INSERT INTO vault_tokens (provider, token, shopper_reference, customer_id)
                VALUES ($1, $2, 'shopper-1', 'customer-1') RETURNING id
                """, [.text(provider.rawValue), .text("tok-multi-\(index)")]).rows.first?.decode("id", as: Int64.self))
            let subscription = try #require(try await pool.query("""
                INSERT INTO subscriptions (vault_token_id, reference, amount_minor, currency, interval, start_at, next_charge_at)
                VALUES ($1, $2, 1999, $3, '{"every": 1, "unit": "month"}', now() + $4 * interval '1 second',
                        now() + $4 * interval '1 second')
                RETURNING id
                """, [.int(token), .text("sub-multi-\(index)"), .text(provider == .mercadopago ? "BRL" : "EUR"),
                      .int(Int64(index))]).rows.first?.decode("id", as: Int64.self))
            ids.append(subscription)
        }
        return ids
    }

    // MARK: Checks

    /// `provider id: status, expected E` for every payment not where its lifecycle ended.
    func wrongStatuses(pool: PostgresPool) async throws -> [String] {
        let rows = try await pool.query("SELECT provider, provider_payment_id, status FROM payments").rows
        var status: [String: String] = [:]
        for row in rows {
            status["\(try row.decode("provider", as: String.self)) \(try row.decode("provider_payment_id", as: String.self))"] =
                try row.decode("status", as: String.self)
        }
        return lifecycles.compactMap { lifecycle in
            let key = "\(lifecycle.provider.rawValue) \(lifecycle.id)"
            let actual = status[key] ?? "missing"
            return actual == lifecycle.expected ? nil : "\(key): \(actual), expected \(lifecycle.expected)"
        }
    }

    /// What is still owed, in words; empty once the run has settled.
    func outstanding(pool: PostgresPool, acknowledged: [String], orders: [Int64], subscriptions: [Int64],
                     endpoint: MerchantEndpoint) async throws -> [String] {
        var missing: [String] = []
        let processed = Set(try await pool.query("SELECT dedup_key FROM inbound_events WHERE status = 'processed'").rows
            .map { try $0.decode("dedup_key", as: String.self) })
        let unprocessed = Set(acknowledged).subtracting(processed)
        if !unprocessed.isEmpty { missing.append("\(unprocessed.count) acknowledged deliveries unprocessed, e.g. \(unprocessed.prefix(3))") }
        let wrong = try await wrongStatuses(pool: pool)
        if !wrong.isEmpty { missing.append("\(wrong.count) payments not final, e.g. \(wrong.prefix(3))") }
        let unfulfilled = try await pool.query("""
            SELECT id, fulfillment_status FROM orders WHERE id = ANY($1::bigint[]) AND fulfillment_status <> 'fulfilled'
            """, [.text("{\(orders.map(String.init).joined(separator: ","))}")]).rows
            .map { "\(try $0.decode("id", as: Int64.self)):\(try $0.decode("fulfillment_status", as: String.self))" }
        if !unfulfilled.isEmpty { missing.append("orders not fulfilled: \(unfulfilled)") }
        let paidIDs = Set(endpoint.received.compactMap { $0.header("webhook-id").map(RestoreSafeIDs.factKey) })
        let unpaid = orders.filter { !paidIDs.contains(FulfillOrderHandler.paidWebhookID(orderID: $0)) }
        if !unpaid.isEmpty { missing.append("orders without order.paid at the merchant: \(unpaid)") }
        let charged = try await pool.query("""
            SELECT s.id FROM subscriptions s
            WHERE NOT EXISTS (SELECT 1 FROM charges c WHERE c.subscription_id = s.id AND c.cycle = 1 AND c.status = 'succeeded')
            """).rows.map { try $0.decode("id", as: Int64.self) }
        if !charged.isEmpty { missing.append("subscriptions without a settled first charge: \(charged)") }
        let jobs = try await pool.query("""
            SELECT kind || ' ' || state AS v, count(*) AS n FROM jobs WHERE state IN ('available', 'running', 'retryable')
            GROUP BY 1 ORDER BY 1
            """).rows.map { "\(try $0.decode("v", as: String.self)) × \(try $0.decode("n", as: Int64.self))" }
        if !jobs.isEmpty { missing.append("unfinished jobs: \(jobs)") }
        let pending = try await pool.query("SELECT count(*) AS n FROM inbound_events WHERE status = 'pending'").rows.first?
            .decode("n", as: Int64.self) ?? 0
        if pending > 0 { missing.append("\(pending) deliveries pending") }
        return missing
    }
}
