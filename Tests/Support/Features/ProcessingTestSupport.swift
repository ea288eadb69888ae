package import Foundation
package import PayhookCore
package import PayhookPostgres
package import PayhookProviders
import Synchronization
import Testing
package import PayhookTestSupport
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable package import PayhookProcessing
@testable import PayhookSubscriptions

/// A clock tests move by hand, so retry backoff is checked without sleeping.
package final class TestClock: Sendable {
    private let current: Mutex<Date>
    package init(_ start: Date = Date()) { current = Mutex(start) }
    package var now: Date { current.withLock { $0 } }
    package func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A provider API stand-in: answers with scripted snapshots, and fails the next calls on
/// request (timeout, 404), deterministically.
package final class FakeProviderClient: PaymentProviderClient, Sendable {
    package let provider: ProviderID
    private struct State {
        package var orders: [String: OrderSnapshot] = [:]
        package var payments: [String: PaymentSnapshot] = [:]
        package var failures: [String: [ProviderAPIError]] = [:]
        package var calls = 0
    }
    private let state = Mutex(State())

    package init(_ provider: ProviderID) { self.provider = provider }

    package func setOrder(_ order: OrderSnapshot) { state.withLock { $0.orders[order.providerOrderID] = order } }
    package func setPayment(_ payment: PaymentSnapshot) { state.withLock { $0.payments[payment.providerPaymentID] = payment } }
    /// The next calls for `id` fail with these errors, in order.
    package func fail(_ id: String, with errors: [ProviderAPIError]) { state.withLock { $0.failures[id, default: []] += errors } }
    package var calls: Int { state.withLock { $0.calls } }

    private func nextFailure(_ id: String) -> ProviderAPIError? {
        state.withLock { state in
            state.calls += 1
            guard var queue = state.failures[id], !queue.isEmpty else { return nil }
            let first = queue.removeFirst()
            state.failures[id] = queue
            return first
        }
    }

    package func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        if let failure = nextFailure(id) { throw failure }
        guard let order = state.withLock({ $0.orders[id] }) else { throw ProviderAPIError(.notFound, "order not found") }
        return order
    }

    package func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        if let failure = nextFailure(id) { throw failure }
        guard let payment = state.withLock({ $0.payments[id] }) else { throw ProviderAPIError(.notFound, "payment not found") }
        return payment
    }

    /// Not used by the processing tests, which only fetch.
    package func charge(storedCredential: StoredCredential, amount: Money, reference: String,
                idempotencyKey: String) async throws(ProviderAPIError) -> ChargeResult {
        throw ProviderAPIError(.unsupported, "the fake provider client does not charge")
    }

    package func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup {
        .unsupported
    }
}

/// The final state of one payment, as compared across permutations.
package struct PaymentRow: Equatable, CustomStringConvertible {
    package let status: String
    package let amountMinor: Int64?
    package let currency: String?
    package let refundedMinor: Int64
    package let chargebacks: Int
    package let reversals: Int

    package init(status: String, amountMinor: Int64?, currency: String?, refundedMinor: Int64, chargebacks: Int, reversals: Int) {
        self.status = status
        self.amountMinor = amountMinor
        self.currency = currency
        self.refundedMinor = refundedMinor
        self.chargebacks = chargebacks
        self.reversals = reversals
    }
    package var description: String {
        "\(status) amount=\(amountMinor.map(String.init) ?? "nil") \(currency ?? "") refunded=\(refundedMinor) cb=\(chargebacks)/\(reversals)"
    }
}

/// A migrated schema, a pool, fake provider clients and a hand-moved clock.
package struct ProcessingHarness: Sendable {
    package let database: TestDatabase
    package let pool: PostgresPool
    package let clock: TestClock
    package let mercadoPago = FakeProviderClient(.mercadopago)
    package let pxp = FakeProviderClient(.pxp)

    package static func make(_ label: String) async throws -> ProcessingHarness {
        let database = try await TestDatabase.migrated(label)
        return ProcessingHarness(database: database, pool: PostgresPool(conninfo: database.url, maxConnections: 6),
                                 clock: TestClock())
    }

    package func processor(maxAttempts: Int = 8, batchSize: Int = 100, workers: Int = 1,
                   threads: ProcessorThreads = .dedicated) -> InboundEventProcessor {
        var settings = ProcessorSettings()
        settings.threads = threads
        settings.maxAttempts = maxAttempts
        settings.batchSize = batchSize
        settings.workers = workers
        settings.pollInterval = .milliseconds(200)
        let clock = self.clock
        return InboundEventProcessor(
            pool: pool, conninfo: database.url, clients: PaymentProviderClients([mercadoPago, pxp]),
            hooks: .fulfillment(FulfillmentSettings(), pool: pool).then(.subscriptions), settings: settings,
            logger: .silent, now: { clock.now }, jitter: { 0.5 })
    }

    /// Inserts a delivery as ingress would, due at the test clock's now.
    @discardableResult
    package func insert(_ provider: ProviderID, _ body: String, dedup: String? = nil) async throws -> Int64 {
        let rows = try await pool.query(
            "INSERT INTO inbound_events (provider, dedup_key, body, next_attempt_at) VALUES ($1, $2, $3, $4) RETURNING id",
            [.text(provider.rawValue), .text(dedup ?? UUID().uuidString), .bytea(Array(body.utf8)), .timestamptz(clock.now)])
        return try #require(try rows.rows.first?.decode("id", as: Int64.self))
    }

    /// Processes batches until none claims anything.
    @discardableResult
    package func drain(_ processor: InboundEventProcessor) async throws -> BatchOutcome {
        var total = BatchOutcome()
        while true {
            let outcome = try await processor.processBatch()
            total.claimed += outcome.claimed
            total.processed += outcome.processed
            total.retried += outcome.retried
            total.dead += outcome.dead
            total.overpayments += outcome.overpayments
            if outcome.claimed == 0 { return total }
        }
    }

    package func payment(_ provider: ProviderID, _ id: String) async throws -> PaymentRow? {
        let rows = try await pool.query("""
            SELECT status, amount_minor, currency, refunded_minor, chargebacks, chargeback_reversals
            FROM payments WHERE provider = $1 AND provider_payment_id = $2
            """, [.text(provider.rawValue), .text(id)])
        guard let row = rows.rows.first else { return nil }
        return PaymentRow(status: try row.decode("status"), amountMinor: try row.decode("amount_minor"),
                          currency: try row.decode("currency"), refundedMinor: try row.decode("refunded_minor"),
                          chargebacks: try row.decode("chargebacks"), reversals: try row.decode("chargeback_reversals"))
    }

    package func inbound(_ id: Int64) async throws -> (status: String, attempts: Int, lastError: String?, nextAttemptAt: Date) {
        let rows = try await pool.query(
            "SELECT status, attempts, last_error, next_attempt_at FROM inbound_events WHERE id = $1", [.int(id)])
        let row = try #require(rows.rows.first)
        return (try row.decode("status"), try row.decode("attempts"), try row.decode("last_error"), try row.decode("next_attempt_at"))
    }

    package func scalar(_ sql: String, _ binds: [PostgresValue] = []) async throws -> Int64 {
        let rows = try await pool.query(sql, binds)
        return try #require(try rows.rows.first?.decode("n", as: Int64.self))
    }

    package func text(_ sql: String, _ binds: [PostgresValue] = []) async throws -> String? {
        let rows = try await pool.query(sql, binds)
        return try rows.rows.first?.decode("v", as: String?.self)
    }
}

/// Provider bodies shaped like the real ones (see Tests/PayhookProvidersTests/Fixtures).
package enum Bodies {
    /// A PXP transaction as the transactions API answers it, already parsed.
    package static func pxpFetched(_ id: String, _ state: String, _ status: PaymentStatus, refunded: Int64? = nil) -> PaymentSnapshot {
        PaymentSnapshot(provider: .pxp, account: "PAYHOOK-1", providerPaymentID: id, merchantReference: "order-\(id)",
                        amount: .test(10010, "EUR"), transition: .advance(status), statusDetail: "CRD000",
                        providerStatus: state, funding: "card", refund: refunded.map { .total(.test($0, "EUR")) })
    }

    package static func adyenItem(psp: String, original: String? = nil, code: String, success: Bool = true, value: Int64?,
                          currency: String = "EUR", reference: String = "order-1143", date: String = "2025-02-24T15:20:56+01:00",
                          extra: [String: String] = [:]) -> String {
        var additional = extra.map { "\"\($0.key)\":\"\($0.value)\"" }
        additional.append("\"hmacSignature\":\"eA==\"")
        let amount = value.map { ",\"amount\":{\"currency\":\"\(currency)\",\"value\":\($0)}" } ?? ""
        let originalField = original.map { ",\"originalReference\":\"\($0)\"" } ?? ""
        return """
            {"NotificationRequestItem":{"additionalData":{\(additional.joined(separator: ","))}\(amount),"eventCode":"\(code)",\
            "eventDate":"\(date)","merchantAccountCode":"PayhookShopEU","merchantReference":"\(reference)"\(originalField),\
            "paymentMethod":"mc","pspReference":"\(psp)","reason":"","success":"\(success)"}}
            """
    }

    package static func adyen(_ items: String...) -> String {
        "{\"live\":\"false\",\"notificationItems\":[\(items.joined(separator: ","))]}"
    }

    package static func adyenToken(type: String, token: String, eventID: String, createdAt: String) -> String {
        """
        {"createdAt":"\(createdAt)","environment":"test","eventId":"\(eventID)","type":"\(type)",\
        "data":{"merchantAccount":"PayhookShopEU","storedPaymentMethodId":"\(token)","shopperReference":"shopper-7781","type":"scheme"}}
        """
    }

    package static func mercadoPago(type: String, action: String, id: String, notification: Int) -> String {
        """
        {"id":\(notification),"live_mode":false,"type":"\(type)","date_created":"2025-03-25T10:04:58.396-04:00",\
        "user_id":1873904477,"api_version":"v1","action":"\(action)","data":{"id":"\(id)"}}
        """
    }

    package static func pxpTransaction(_ id: String, state: String, date: String = "2025-05-20T08:51:04Z") -> String {
        """
        {"eventCategory":"Transaction","eventDate":"\(date)","eventData":{"state":"\(state)","systemTransactionId":"\(id)",\
        "merchantTransactionId":"order-\(id)","stateData":{"code":"CRD000"},"transactionMethod":{"intent":"Authorisation",\
        "entryType":"Ecom","fundingType":"Card"},"amounts":{"transaction":"100.10","currencyCode":"EUR"}},\
        "eventOwner":{"merchantGroup":"PAYHOOK-GRP","merchant":"PAYHOOK-1","site":"SITE-EU"}}
        """
    }

    package static func pxpToken(_ token: String, status: String, date: String) -> String {
        """
        {"eventCategory":"Token","eventDate":"\(date)","eventData":{"gatewayTokenId":"\(token)",\
        "maskedPrimaryAccountNumber":"940000******0007","expiryMonth":"4","expiryYear":"2030","scheme":"Visa",\
        "status":"\(status)"},"eventOwner":{"merchantGroup":"PAYHOOK-GRP","merchant":"PAYHOOK-1","site":"SITE-EU"}}
        """
    }
}

extension Money {
    /// A test amount; the currency codes used in tests are valid.
    package static func test(_ minor: Int64, _ currency: String) -> Money {
        (try? Money(minorUnits: minor, currency: currency)) ?? Money.zeroEUR
    }
    private static let zeroEUR: Money = {
        guard let money = try? Money(minorUnits: 0, currency: "EUR") else { preconditionFailure("EUR is valid") }
        return money
    }()
}
