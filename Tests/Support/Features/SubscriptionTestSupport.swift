package import Foundation
package import PayhookCore
package import PayhookEmulator
import PayhookHTTP
package import PayhookPostgres
package import PayhookProviders
package import PayhookQueue
import Testing
package import PayhookTestSupport
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable package import PayhookSubscriptions

/// A migrated schema, the provider emulator with the real clients pointed at it, a job queue,
/// and a hand-moved clock: what the recurring-charge suites share.
package struct SubscriptionHarness: Sendable {
    package let database: TestDatabase
    package let pool: PostgresPool
    package let clock: TestClock
    package let emulator: ProviderEmulator
    package let clients: PaymentProviderClients
    package let queue: JobQueue
    package let metrics = MetricsRegistry()
    package var settings = SubscriptionSettings()

    package init(database: TestDatabase, pool: PostgresPool, clock: TestClock, emulator: ProviderEmulator,
                 clients: PaymentProviderClients, queue: JobQueue) {
        self.database = database
        self.pool = pool
        self.clock = clock
        self.emulator = emulator
        self.clients = clients
        self.queue = queue
    }

    /// A fixed start ahead of the real clock, so every job the queue makes due "now" (database
    /// time) is also due on the test clock.
    package static let epoch = Date(timeIntervalSince1970: 1_893_492_000)  // 2030-01-01T10:00:00Z

    package static func make(_ label: String, clientTimeout: Duration = .seconds(10), emulator: Bool = true) async throws -> SubscriptionHarness {
        let database = try await TestDatabase.migrated(label)
        let pool = PostgresPool(conninfo: database.url, maxConnections: 8, acquireTimeout: .seconds(60))
        let emulatorInstance = try ProviderEmulator()
        if emulator { try emulatorInstance.start() }
        let clients = emulatorInstance.clients(http: CurlHTTPClient(maxConcurrent: 32), timeout: clientTimeout)
        // Backoff pinned to its minimum so "retry later" is a second, not a guess.
        let queue = JobQueue(pool: pool, retryPolicy: RetryPolicy(base: .milliseconds(100), maximum: .seconds(1), jitter: 0),
                             unitRandom: { 1 })
        return SubscriptionHarness(database: database, pool: pool, clock: TestClock(epoch), emulator: emulatorInstance,
                                   clients: clients, queue: queue)
    }

    package func stop() { emulator.stop() }

    // MARK: Seeding

    /// An active (or other status) vault token with the companion fields every provider needs.
    @discardableResult
    package func seedToken(_ provider: ProviderID, token: String? = nil, status: String = "active") async throws -> Int64 {
        let rows = try await pool.query("""
            INSERT INTO vault_tokens (provider, token, shopper_reference, customer_id, brand, last4, status)
            VALUES ($1, $2, 'shopper-7781', 'customer-1234', 'visa', '1111', $3) RETURNING id
            """, [.text(provider.rawValue), .text(token ?? "tok-\(provider.rawValue)-\(UUID().uuidString.prefix(8))"), .text(status)])
        return try #require(try rows.rows.first?.decode("id", as: Int64.self))
    }

    package var operations: SubscriptionOperations {
        let clock = self.clock
        return SubscriptionOperations(pool: pool, now: { clock.now })
    }

    /// A subscription created as the admin API would, starting at the clock's now.
    @discardableResult
    package func subscribe(token: Int64, amount: Int64 = 1999, currency: String = "EUR", every: Int = 1,
                   unit: SubscriptionInterval.Unit = .month, start: Date? = nil, maxCycles: Int? = nil,
                   reference: String? = nil) async throws -> Int64 {
        let draft = NewSubscription(
            token: .id(token), amount: try Money(minorUnits: amount, currency: currency),
            interval: try #require(SubscriptionInterval(every: every, unit: unit)), startAt: start ?? clock.now,
            reference: reference ?? "sub-\(UUID().uuidString.prefix(12))", maxCycles: maxCycles, endAt: nil, actor: nil)
        return try await operations.create(draft, by: OperatorAction(actor: "test")).id
    }

    // MARK: Running

    package func scheduler(catchUp: SubscriptionSettings.CatchUp = .all, batchSize: Int? = nil) -> SubscriptionScheduler {
        var settings = self.settings
        settings.catchUp = catchUp
        if let batchSize { settings.schedulerBatchSize = batchSize }
        let clock = self.clock
        return SubscriptionScheduler(pool: pool, queue: queue, settings: settings, logger: .silent, metrics: metrics,
                                     now: { clock.now })
    }

    package func handler(afterProviderCall: (@Sendable (String) async throws -> Void)? = nil) -> ChargeRecurringHandler {
        let clock = self.clock
        return ChargeRecurringHandler(pool: pool, queue: queue, clients: clients, settings: settings, metrics: metrics,
                                      logger: .silent, now: { clock.now }, afterProviderCall: afterProviderCall)
    }

    /// Jobs whose `run_at` has passed on the test clock become due for the database too (the
    /// queue compares `run_at` with the database's clock, which the test clock ran ahead of).
    package func releaseDueJobs() async throws {
        try await pool.query("""
            UPDATE jobs SET run_at = now() - interval '1 second'
            WHERE kind = 'charge_recurring' AND state IN ('available', 'retryable') AND run_at <= $1
            """, [.timestamptz(clock.now)])
    }

    /// Claims and runs due charge jobs one round after another, as a worker would, until none is
    /// due; each round first releases jobs due on the test clock. Bounded, so a job that never
    /// settles fails the test instead of hanging it.
    @discardableResult
    package func runChargeJobs(_ handler: ChargeRecurringHandler, rounds: Int = 40) async throws -> [JobOutcome] {
        var outcomes: [JobOutcome] = []
        for _ in 0..<rounds {
            try await releaseDueJobs()
            let jobs = try await queue.claim(limit: 50, kinds: [ChargeRecurringHandler.kind], worker: "test-worker", lease: .seconds(300))
            if jobs.isEmpty { return outcomes }
            for job in jobs {
                let outcome: JobOutcome
                do {
                    outcome = try await handler.run(job)
                } catch {
                    outcome = .retry(error: String(describing: error))
                }
                outcomes.append(outcome)
                try await queue.record(outcome, for: job)
            }
        }
        return outcomes
    }

    // MARK: Reading

    package func int(_ sql: String, _ binds: [PostgresValue] = []) async throws -> Int64 {
        try #require(try await pool.query(sql, binds).rows.first?.decode("n", as: Int64.self))
    }

    package func text(_ sql: String, _ binds: [PostgresValue] = []) async throws -> String? {
        try await pool.query(sql, binds).rows.first?.decode("v", as: String?.self)
    }

    package func charges(_ subscription: Int64) async throws -> [Charge] {
        try await operations.detail(id: subscription).charges
    }

    package func subscription(_ id: Int64) async throws -> Subscription {
        try await operations.detail(id: id).subscription
    }

    /// This database's idempotency-key namespace (migration 0011).
    package func namespace() async throws -> String {
        try #require(try await text("SELECT key_namespace AS v FROM installation"))
    }

    /// The idempotency key stored for an attempt; for an attempt without a row yet, a fresh one
    /// in the form the scheduler or dunning would give it (ask again after inserting it).
    package func key(_ subscription: Int64, cycle: Int, attempt: Int = 1) async throws -> String {
        if let stored = try await text("""
            SELECT idempotency_key AS v FROM charges WHERE subscription_id = $1 AND cycle = $2 AND attempt = $3
            """, [.int(subscription), .int(Int64(cycle)), .int(Int64(attempt))]) {
            return stored
        }
        return Charge.idempotencyKey(namespace: try await namespace(), subscriptionID: subscription, cycle: cycle, attempt: attempt,
                                     nonce: Charge.newKeyNonce())
    }

    /// `cycle/attempt:status` of every charge, oldest first.
    package func chargeSummary(_ subscription: Int64) async throws -> [String] {
        try await charges(subscription).map { "\($0.cycle)/\($0.attempt):\($0.status)" }
    }
}

/// Per-provider emulator controls and decline codes, so one test body serves all three.
extension ProviderEmulator {
    /// The real provider clients, pointed at this emulator with its credentials.
    package func clients(http: any HTTPClient, timeout: Duration) -> PaymentProviderClients {
        let credentials = configuration
        return PaymentProviderClients([
            MercadoPagoAPIClient(baseURL: baseURL(for: .mercadopago), accessToken: credentials.mercadoPagoAccessToken,
                                 http: http, timeout: timeout),
            AdyenAPIClient(baseURL: baseURL(for: .adyen), apiKey: credentials.adyenAPIKey,
                           merchantAccount: credentials.adyenMerchantAccount, http: http, timeout: timeout),
            PXPAPIClient(baseURL: baseURL(for: .pxp), clientID: credentials.pxpClientID, tokenID: credentials.pxpTokenID,
                         tokenValue: credentials.pxpTokenValue, merchant: credentials.pxpMerchant, site: credentials.pxpSite,
                         http: http, timeout: timeout),
        ])
    }

    package func script(_ provider: ProviderID, _ results: [EmulatedChargeResult]) {
        switch provider {
        case .mercadopago: mercadoPago.scriptCharges(results)
        case .adyen: adyen.scriptCharges(results)
        case .pxp: pxp.scriptCharges(results)
        }
    }

    package func failCharges(_ provider: ProviderID, next count: Int = 1, with fault: EmulatorFault) {
        switch provider {
        case .mercadopago: mercadoPago.fail(next: count, with: fault, on: .createOrder)
        case .adyen: adyen.fail(next: count, with: fault, on: .payments)
        case .pxp: pxp.fail(next: count, with: fault, on: .createTransaction)
        }
    }

    package func executed(_ provider: ProviderID) -> [ExecutedCharge] {
        switch provider {
        case .mercadopago: mercadoPago.allExecutedCharges
        case .adyen: adyen.allExecutedCharges
        case .pxp: pxp.allExecutedCharges
        }
    }

    /// Executed charges per idempotency key.
    package func executedByKey(_ provider: ProviderID) -> [String: Int] {
        var counts: [String: Int] = [:]
        for charge in executed(provider) { counts[charge.idempotencyKey ?? "-", default: 0] += 1 }
        return counts
    }

    /// Executed charges per attempt: the idempotency key without its random nonce
    /// (`<namespace>-sub-<id>-c<cycle>-a<attempt>`).
    package func executedByAttempt(_ provider: ProviderID) -> [String: Int] {
        var counts: [String: Int] = [:]
        for charge in executed(provider) { counts[RestoreSafeIDs.keyStem(charge.idempotencyKey ?? "-"), default: 0] += 1 }
        return counts
    }
}

extension ProviderID {
    /// A decline code the provider's classification table calls soft.
    package var softDeclineCode: String {
        switch self {
        case .mercadopago: "insufficient_amount"
        case .adyen: "12"
        case .pxp: "CRD105"
        }
    }

    /// A decline code the provider's classification table calls hard.
    package var hardDeclineCode: String {
        switch self {
        case .mercadopago: "card_disabled"
        case .adyen: "6"
        case .pxp: "CRD201"
        }
    }
}

extension SubscriptionHarness {
    /// A date as the subscription API writes it (ISO 8601, UTC).
    package static func format(_ date: Date) -> String { date.formatted(Date.ISO8601FormatStyle()) }
}

/// Calls to `/v1/subscriptions` handled by `SubscriptionAdminAPI` directly, without a listener.
package enum SubscriptionAdminCalls {
    package struct Reply {
        package let status: Int
        package let json: [String: Any]
        package var field: String? { json["field"] as? String }
        package var code: String? { json["code"] as? String }

        package init(status: Int, json: [String: Any]) {
            self.status = status
            self.json = json
        }
    }

    package static func call(_ api: SubscriptionAdminAPI, _ method: String, _ path: String, query: String = "",
                             body: String = "") async -> Reply {
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            let request = HTTPRequest(method: method, path: path, rawQuery: query, body: Array(body.utf8), remoteAddress: "127.0.0.1")
            if !api.handle(request, respond: { continuation.resume(returning: $0) }) {
                continuation.resume(returning: HTTPResponse(status: 0))
            }
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return Reply(status: response.status, json: json)
    }

    /// A subscription creation body.
    package static func body(token: String = #""vault_token": {"provider": "adyen", "token": "tok-active"}"#,
                             reference: String = "sub-42", extra: String = "") -> String {
        #"{\#(token), "amount": {"value": 1999, "currency": "EUR"}, "interval": {"every": 1, "unit": "month"}, "reference": "\#(reference)", "max_cycles": null\#(extra)}"#
    }
}
