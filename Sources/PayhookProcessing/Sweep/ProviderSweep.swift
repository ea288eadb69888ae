package import Foundation
package import PayhookCore
package import PayhookPostgres
import PayhookLedger
import PayhookProviders
package import PayhookQueue
import PayhookCallbacks

/// Notices what providers never sent: webhooks get lost (Adyen gives up after about 30 days,
/// PXP after about 10 seconds, an endpoint can be misconfigured for days), so payhook looks
/// for what should have moved and did not.
///
/// Each ``sweep(now:)`` finds:
/// - registered orders still unpaid past ``ProviderSweepSettings/orderDeadline``;
/// - payments `pending` past ``ProviderSweepSettings/pendingAfter``, or `authorized` past
///   ``ProviderSweepSettings/authorizationLifetime``;
/// - charges `pending` past their own re-checks (``ProviderSweepSettings/chargePendingAfter``).
///
/// Where the provider can be asked (Mercado Pago orders and payments, PXP transactions), it
/// queues a ``ProviderLookupRequest`` in `inbound_events`; a processor fetches the answer and
/// applies it as authoritative state through the normal processing path. Where it cannot
/// (Adyen has no payment lookup), the subject waits for a person: `sweep_checks` marks it, the
/// gauge `payhook_sweep_waiting_on_provider` counts it, the console lists it. Nothing is
/// guessed. An order whose lookup came back still unpaid, or which has no lookup, expires,
/// with an `order.expired` callback when ``ProviderSweepSettings/notifyOrderExpired``.
///
/// Safe with any number of processes: one sweep at a time holds a transaction-scoped advisory
/// lock (others skip the round), and every lookup's dedup key and every record is unique per
/// subject and round, so a subject is handled once even if two sweeps overlap.
package final class ProviderSweep: Sendable {
    /// What one sweep did; for tests, logs and metrics.
    package struct Outcome: Sendable, Equatable {
        /// Lookups queued, by provider.
        package var lookups: [String: Int] = [:]
        /// Subjects raised for a person this round.
        package var raised = 0
        /// Orders expired unpaid.
        package var expired = 0
        /// Another process held the sweep lock; this one did nothing.
        package var skipped = false
    }

    static let lockKey = "payhook:provider_sweep"

    private let pool: PostgresPool
    private let settings: ProviderSweepSettings
    private let paidStatuses: [String]
    private let outbox: MerchantCallbackOutbox
    private let logger: Logger
    private let metrics: SweepMetrics?
    /// Sweeps every `settings.interval` while `run()` goes.
    private let loop = PeriodicLoop()
    /// What `run()` waits for when the sweep is off (no interval).
    private let stopped = StopSignal()

    /// - Parameters:
    ///   - fulfillment: what counts as paid (``FulfillmentSettings/fulfillOnAuthorized``).
    ///   - lookups: the providers whose client is configured; others are raised, not asked.
    package init(pool: PostgresPool, settings: ProviderSweepSettings, fulfillment: FulfillmentSettings,
                 queue: JobQueue, metrics: MetricsRegistry?, logger: Logger) {
        self.pool = pool
        self.settings = settings
        self.paidStatuses = fulfillment.paidStatuses
        self.outbox = MerchantCallbackOutbox(queue: queue)
        self.logger = logger
        self.metrics = metrics.map(SweepMetrics.init)
    }

    /// One sweep, in one transaction.
    /// - Throws: `PostgresError`; nothing of the round is kept and the next one starts over.
    @discardableResult
    package func sweep(now: Date) async throws -> Outcome {
        let outcome = try await pool.transaction { connection in
            var outcome = Outcome()
            let locked: Bool = try await connection.query(SweepSQL.shared.tryLock, [.text(Self.lockKey)])
                .rows.first?.decode("locked") ?? false
            guard locked else {
                outcome.skipped = true
                return outcome
            }
            try await self.sweepOrders(now: now, outcome: &outcome, on: connection)
            try await self.sweepPayments(now: now, outcome: &outcome, on: connection)
            try await self.sweepCharges(now: now, outcome: &outcome, on: connection)
            return outcome
        }
        if !outcome.skipped { try await refreshWaitingGauge() }
        metrics?.record(outcome)
        if outcome.raised > 0 || outcome.expired > 0 || !outcome.lookups.isEmpty {
            logger.info("provider sweep", [
                "sweep.lookups": .int(Int64(outcome.lookups.values.reduce(0, +))),
                "sweep.raised": .int(Int64(outcome.raised)), "sweep.expired": .int(Int64(outcome.expired)),
            ])
        }
        return outcome
    }

    // MARK: Orders

    private func sweepOrders(now: Date, outcome: inout Outcome, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(SweepSQL.shared.dueOrders, [
            .timestamptz(now.addingTimeInterval(-settings.orderDeadline.seconds)), paidBind,
            .int(Int64(settings.batchSize)),
        ])
        for row in rows {
            let id: Int64 = try row.decode("id")
            let providerText: String = try row.decode("provider")
            let providerOrderID: String? = try row.decode("provider_order_id")
            let lookupStatus: String? = try row.decode("lookup_status")
            // Only Mercado Pago has an order to fetch; PXP and Adyen orders are their payments,
            // which the payment sweep handles.
            if providerText == ProviderID.mercadopago.rawValue, let providerOrderID {
                if lookupStatus == nil {
                    try await queueLookup(provider: providerText, account: try row.decode("account"),
                                          dedupKey: "sweep:order:\(id)", ProviderLookupRequest(resource: .order, id: providerOrderID),
                                          on: connection)
                    outcome.lookups[providerText, default: 0] += 1
                    continue
                }
                // The answer is not applied yet: expiring now would race it.
                if lookupStatus == "pending" { continue }
            }
            guard try await connection.query(LedgerSQL.shared.expireOrder, [.int(id), paidBind, .timestamptz(now)]).rows.first != nil
            else { continue }
            outcome.expired += 1
            guard settings.notifyOrderExpired else { continue }
            let reference: String? = try row.decode("merchant_reference")
            let amount: Int64? = try row.decode("expected_amount_minor")
            let currency: String? = try row.decode("expected_currency")
            let registeredAt: Date = try row.decode("registered_at")
            let data = JSONOutput.object([
                .init("order_id", .int(id)),
                .init("merchant_reference", .optional(reference)),
                .init("provider", .string(providerText)),
                .init("provider_order_id", .optional(providerOrderID)),
                .init("amount", OrderRecord.money(amount, currency)),
                .init("registered_at", .timestamp(registeredAt)),
            ])
            try await outbox.enqueue(MerchantCallback(
                webhookID: "order.expired.\(id)", type: "order.expired", data: data, orderID: id,
                url: try row.decode("callback_url"), occurredAt: now), on: connection)
        }
    }

    // MARK: Payments and charges

    private func sweepPayments(now: Date, outcome: inout Outcome, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(SweepSQL.shared.duePayments, [
            .timestamptz(now.addingTimeInterval(-settings.pendingAfter.seconds)),
            .timestamptz(now.addingTimeInterval(-settings.authorizationLifetime.seconds)),
            .timestamptz(now.addingTimeInterval(-settings.recheck.seconds)), .int(Int64(settings.batchSize)),
        ])
        for row in rows {
            let id: Int64 = try row.decode("id")
            let providerText: String = try row.decode("provider")
            let status: String = try row.decode("status")
            let checks: Int = try row.decode("checks")
            let paymentID: String = try row.decode("provider_payment_id")
            let orderID: String? = try row.decode("provider_order_id")
            let request: ProviderLookupRequest?
            switch ProviderID(rawValue: providerText) {
            // A Mercado Pago payment of an order is looked up through its order: the Orders API's
            // payments have no resource of their own under /v1/payments.
            case .mercadopago?: request = orderID.map { ProviderLookupRequest(resource: .order, id: $0) }
                ?? ProviderLookupRequest(resource: .payment, id: paymentID)
            case .pxp?: request = ProviderLookupRequest(resource: .payment, id: paymentID)
            case .adyen?, nil: request = nil
            }
            try await handle(subject: "payment", id: id, provider: providerText, account: try row.decode("account"),
                             reason: "\(status)_unchanged", request: request, checks: checks, now: now,
                             outcome: &outcome, on: connection)
        }
    }

    private func sweepCharges(now: Date, outcome: inout Outcome, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(SweepSQL.shared.dueCharges, [
            .timestamptz(now.addingTimeInterval(-settings.chargePendingAfter.seconds)),
            .timestamptz(now.addingTimeInterval(-settings.recheck.seconds)), .int(Int64(settings.batchSize)),
        ])
        for row in rows {
            let id: Int64 = try row.decode("id")
            let providerText: String = try row.decode("provider")
            let paymentID: String? = try row.decode("provider_payment_id")
            let orderID: String? = try row.decode("provider_order_id")
            let request: ProviderLookupRequest?
            switch ProviderID(rawValue: providerText) {
            // Mercado Pago charges are orders: `provider_payment_id` holds the order id.
            case .mercadopago?: request = (orderID ?? paymentID).map { ProviderLookupRequest(resource: .order, id: $0) }
            case .pxp?: request = paymentID.map { ProviderLookupRequest(resource: .payment, id: $0) }
            case .adyen?, nil: request = nil
            }
            try await handle(subject: "charge", id: id, provider: providerText, account: try row.decode("account"),
                             reason: "charge_pending_past_checks", request: request, checks: try row.decode("checks"),
                             now: now, outcome: &outcome, on: connection)
        }
    }

    /// Queues the subject's lookup, or raises it for a person when there is none, and records
    /// the look so the next one waits ``ProviderSweepSettings/recheck``.
    private func handle(subject: String, id: Int64, provider: String, account: String, reason: String,
                        request: ProviderLookupRequest?, checks: Int, now: Date,
                        outcome: inout Outcome, on connection: PostgresConnection) async throws {
        if let request {
            try await queueLookup(provider: provider, account: account, dedupKey: "sweep:\(subject):\(id):\(checks + 1)",
                                  request, on: connection)
            outcome.lookups[provider, default: 0] += 1
        } else {
            outcome.raised += 1
            logger.warning("waiting on the provider: no lookup exists; a person must check", [
                "provider": .string(provider), "sweep.subject": .string(subject), "sweep.subject_id": .int(id),
                "sweep.reason": .string(reason),
            ])
        }
        try await connection.query(SweepSQL.shared.recordCheck, [
            .text(subject), .int(id), .text(provider), .text(reason), .bool(request == nil), .timestamptz(now),
        ])
    }

    private func queueLookup(provider: String, account: String, dedupKey: String, _ request: ProviderLookupRequest,
                             on connection: PostgresConnection) async throws {
        try await connection.query(SweepSQL.shared.insertLookup, [
            .text(provider), .text(account), .text(dedupKey), .bytea(request.body),
        ])
    }

    private var paidBind: PostgresValue { .text("{" + paidStatuses.joined(separator: ",") + "}") }

    // MARK: Waiting on the provider

    /// One subject that waits for a person.
    package struct Waiting: Sendable, Equatable {
        package var subject: String
        package var subjectID: Int64
        package var provider: String
        package var reason: String
        package var providerReference: String?
        package var status: String?
        package var since: Date
    }

    /// The subjects waiting on the provider, oldest first (the console's list).
    package static func waiting(limit: Int, on pool: PostgresPool) async throws -> [Waiting] {
        try await pool.query(SweepSQL.shared.waitingOnProvider, [.int(Int64(limit))]).rows.map { row in
            Waiting(subject: try row.decode("subject"), subjectID: try row.decode("subject_id"),
                    provider: try row.decode("provider"), reason: try row.decode("reason"),
                    providerReference: try row.decode("provider_reference"), status: try row.decode("status"),
                    since: try row.decode("waiting_on_provider_since"))
        }
    }

    private func refreshWaitingGauge() async throws {
        guard let metrics else { return }
        var counts: [String: Int] = [:]
        for row in try await pool.query(SweepSQL.shared.countWaiting) {
            counts[try row.decode("provider")] = try row.decode("waiting")
        }
        metrics.setWaiting(counts)
    }
}

extension ProviderSweep: Service {
    package var serviceName: String { "provider sweep" }

    /// Sweeps now and every `settings.interval` until `stop()`; a failed round is logged and the
    /// next one starts over. With no interval (the sweep turned off) it only waits for `stop()`.
    package func run() async {
        guard let interval = settings.interval else { return await stopped.wait() }
        await loop.run(every: interval) {
            do {
                try await sweep(now: Date())
            } catch {
                logger.warning("provider sweep failed; the next round starts over", ["error": .string(String(describing: error))])
            }
        }
    }

    /// Ends `run` after the round in progress.
    package func stop() {
        loop.stop()
        stopped.fire()
    }
}

/// The sweep's metrics.
struct SweepMetrics: Sendable {
    let registry: MetricsRegistry

    init(registry: MetricsRegistry) {
        self.registry = registry
        registry.describe("payhook_sweep_lookups_total", type: "counter",
                          help: "Provider lookups the sweep queued for orders, payments and charges nobody reported on.")
        registry.describe("payhook_sweep_orders_expired_total", type: "counter",
                          help: "Registered orders the sweep expired unpaid.")
        registry.describe("payhook_sweep_raised_total", type: "counter",
                          help: "Times the sweep raised a payment or charge for a person because the provider has no lookup.")
        registry.describe("payhook_sweep_waiting_on_provider", type: "gauge",
                          help: "Payments and charges stuck without a provider lookup, waiting for a person (console: Waiting on the provider).")
    }

    func record(_ outcome: ProviderSweep.Outcome) {
        for (provider, count) in outcome.lookups {
            registry.counter("payhook_sweep_lookups_total", [("provider", provider)]).increment(by: UInt64(count))
        }
        if outcome.expired > 0 { registry.counter("payhook_sweep_orders_expired_total").increment(by: UInt64(outcome.expired)) }
        if outcome.raised > 0 { registry.counter("payhook_sweep_raised_total").increment(by: UInt64(outcome.raised)) }
    }

    /// Every provider gets a value, zero included, so an alert sees the series go back down.
    func setWaiting(_ counts: [String: Int]) {
        for provider in ProviderID.allCases {
            registry.set("payhook_sweep_waiting_on_provider", [("provider", provider.rawValue)],
                         to: Double(counts[provider.rawValue] ?? 0))
        }
    }
}
