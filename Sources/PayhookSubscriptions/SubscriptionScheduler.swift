import Foundation
import PayhookCore
import PayhookPostgres
import PayhookQueue
import Synchronization
import PayhookAdmin
import PayhookCallbacks

/// Turns due subscriptions into charge attempts: exactly one first attempt per cycle.
///
/// Any number of schedulers, in any number of processes, may run at once; no leader is
/// assumed. Each batch is one transaction that claims due active subscriptions with
/// `FOR UPDATE … SKIP LOCKED` (schedulers take disjoint rows; a row advanced by another
/// scheduler is re-checked by PostgreSQL and no longer due), inserts the `charges` row of each
/// due cycle with its idempotency key (`<namespace>-sub-<id>-c<cycle>-a1-<nonce>`), enqueues one
/// `charge_recurring` job per charge with that key as `unique_key`, and advances `cycle` and
/// `next_charge_at` (or completes the subscription after `max_cycles` / `end_at`). Either all
/// of it commits or none, so a crash can neither lose a cycle nor schedule it twice; the unique
/// keys on `charges` and `jobs` are the second line of defence.
///
/// Missed cycles (downtime, a clock jump) follow `SubscriptionSettings.catchUp`: `all` charges
/// each once, oldest first, but at most `maxCatchUp` of one subscription at once (the latest);
/// `latest` charges only the latest due one. Cycles left out are reported to the merchant with
/// one `subscription.cycles_skipped` callback.
///
/// Threading: `tick` may be called from any task; `run` owns a loop until `stop()`.
package final class SubscriptionScheduler: Sendable {
    /// Cycles one subscription gets per batch when catching up; the rest follow in later batches.
    static let maxCyclesPerBatch = 100

    private let pool: PostgresPool
    private let queue: JobQueue
    private let settings: SubscriptionSettings
    private let logger: Logger
    private let metrics: MetricsRegistry?
    private let now: @Sendable () -> Date
    private let loop = PeriodicLoop()

    /// - Parameters:
    ///   - queue: where charge jobs go (its pool is not used: jobs are enqueued on the batch's connection).
    ///   - now: the clock deciding what is due; injected so tests move time by hand.
    init(pool: PostgresPool, queue: JobQueue, settings: SubscriptionSettings, logger: Logger,
         metrics: MetricsRegistry? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.queue = queue
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.now = now
        metrics?.describe("payhook_charges_scheduled_total", type: "counter",
                          help: "First charge attempts created by the subscription scheduler.")
        metrics?.describe("payhook_cycles_skipped_total", type: "counter",
                          help: "Missed subscription cycles never charged (catch-up latest or beyond PAYHOOK_SCHEDULER_MAX_CATCH_UP), each reported to the merchant.")
    }

    // MARK: Loop

    /// Ticks once at start and then every `settings.schedulerInterval` until `stop()`. Errors
    /// are logged and the next tick tries again.
    package func run() async {
        await loop.run(every: settings.schedulerInterval) {
            do {
                let created = try await tick(now: now())
                if created > 0 { logger.info("charges scheduled", ["charges.created": .init(created)]) }
            } catch {
                logger.error("scheduler tick failed", ["error": .string(String(describing: error))])
            }
        }
    }

    /// Ends `run` after the batch in progress commits.
    package func stop() {
        loop.stop()
    }

    // MARK: Scheduling

    /// Schedules everything due at `now`, batch after batch, until nothing is left.
    /// - Returns: the charges (first attempts) created.
    /// - Throws: `PostgresError`; the failed batch changed nothing, earlier ones are committed.
    @discardableResult
    func tick(now: Date) async throws -> Int {
        var total = 0
        while true {
            let batch = try await scheduleBatch(now: now)
            total += batch.created
            if batch.claimed < settings.schedulerBatchSize && !batch.stillDue { return total }
            if batch.claimed == 0 { return total }
        }
    }

    /// A claimed subscription, as the scheduler reads it.
    package struct DueSubscription: Sendable {
        let id: Int64
        let interval: SubscriptionInterval?
        let startAt: Date
        let cycle: Int
        let maxCycles: Int?
        let endAt: Date?
        let amountMinor: Int64
        let currency: String
        let provider: String
    }

    /// What one batch does to one subscription: pure, so the catch-up rules are unit-tested.
    package struct Plan: Sendable, Equatable {
        /// Cycles to charge now, with their due dates.
        var charges: [(cycle: Int, dueAt: Date)]
        /// Missed cycles that will never be charged (catch-up `latest`, or beyond
        /// `maxCatchUp`); the merchant is told.
        var skipped: ClosedRange<Int>? = nil
        var nextCycle: Int
        var nextChargeAt: Date
        var status: Subscription.Status
        var statusReason: String?

        package static func == (lhs: Plan, rhs: Plan) -> Bool {
            lhs.charges.map(\.cycle) == rhs.charges.map(\.cycle) && lhs.charges.map(\.dueAt) == rhs.charges.map(\.dueAt)
                && lhs.skipped == rhs.skipped
                && lhs.nextCycle == rhs.nextCycle && lhs.nextChargeAt == rhs.nextChargeAt && lhs.status == rhs.status
                && lhs.statusReason == rhs.statusReason
        }
    }

    /// - Parameter maxCatchUp: most cycles charged when several fell due at once (after
    ///   downtime); the older ones are skipped. `latest` is the same with one.
    static func plan(interval: SubscriptionInterval, startAt: Date, cycle firstCycle: Int, maxCycles: Int?, endAt: Date?,
                     now: Date, catchUp: SubscriptionSettings.CatchUp, maxCatchUp: Int = .max,
                     limit: Int = maxCyclesPerBatch) -> Plan {
        func due(_ cycle: Int) -> Date { interval.dueDate(cycle: cycle, start: startAt) }
        func beyondEnd(_ cycle: Int) -> Bool {
            if let maxCycles, cycle > maxCycles { return true }
            if let endAt, due(cycle) > endAt { return true }
            return false
        }
        var cycle = max(1, firstCycle)
        var skipped: ClosedRange<Int>?
        let keep = catchUp == .latest ? 1 : max(1, maxCatchUp)
        var latest = interval.lastCycle(dueAtOrBefore: now, start: startAt)
        if let maxCycles { latest = min(latest, maxCycles) }
        if let endAt { latest = min(latest, interval.lastCycle(dueAtOrBefore: endAt, start: startAt)) }
        if latest - cycle >= keep {
            skipped = cycle...(latest - keep)
            cycle = latest - keep + 1
        }
        var charges: [(cycle: Int, dueAt: Date)] = []
        while charges.count < limit, !beyondEnd(cycle), due(cycle) <= now {
            charges.append((cycle, due(cycle)))
            cycle += 1
        }
        let finished = beyondEnd(cycle)
        return Plan(charges: charges, skipped: skipped, nextCycle: cycle, nextChargeAt: due(cycle),
                    status: finished ? .completed : .active, statusReason: finished ? "last cycle \(cycle - 1) scheduled" : nil)
    }

    private struct BatchResult {
        var claimed = 0
        var created = 0
        var skipped = 0
        var stillDue = false
    }

    /// `subscription.cycles_skipped`: cycles that fell due and will not be charged, so the
    /// merchant can settle them another way. The webhook-id names the range, so a replayed batch
    /// is one fact.
    static func skippedCallback(subscriptionID: Int64, reference: String, amountMinor: Int64, currency: String,
                                cycles: ClosedRange<Int>, reason: String, at now: Date) -> MerchantCallback {
        MerchantCallback(
            webhookID: "subscription.cycles_skipped:\(subscriptionID):c\(cycles.lowerBound)-c\(cycles.upperBound)",
            type: "subscription.cycles_skipped",
            data: .object([
                .init("subscription_id", .int(subscriptionID)), .init("reference", .string(reference)),
                .init("first_cycle", .int(Int64(cycles.lowerBound))), .init("last_cycle", .int(Int64(cycles.upperBound))),
                .init("count", .int(Int64(cycles.count))), .init("reason", .string(reason)),
                .init("amount", .object([.init("value", .int(amountMinor)), .init("currency", .string(currency))])),
            ]),
            orderID: nil, subscriptionID: subscriptionID, url: nil, occurredAt: now)
    }

    private func scheduleBatch(now: Date) async throws -> BatchResult {
        let catchUp = settings.catchUp
        let maxCatchUp = settings.maxCatchUp
        let batchSize = settings.schedulerBatchSize
        let maxAttempts = settings.chargeMaxAttempts
        let result = try await pool.transaction { connection in
            let rows = try await connection.query(SubscriptionSQL.shared.claimDue, [.timestamptz(now), .int(Int64(batchSize))])
            var result = BatchResult(claimed: rows.rows.count)
            guard !rows.rows.isEmpty else { return result }
            let namespace = try await InstallationNamespace.load(on: connection)
            var charges: [JSONOutput] = []
            var jobs: [JobRequest] = []
            var advances: [JSONOutput] = []
            for row in rows.rows {
                let due = DueSubscription(
                    id: try row.decode("id"), interval: SubscriptionInterval.parse(json: try row.decode("interval")),
                    startAt: try row.decode("start_at"), cycle: try row.decode("cycle"), maxCycles: try row.decode("max_cycles"),
                    endAt: try row.decode("end_at"), amountMinor: try row.decode("amount_minor"),
                    currency: try row.decode("currency"), provider: try row.decode("provider"))
                guard let interval = due.interval else {
                    // Not writable through the API; a row edited by hand must not stop the others.
                    advances.append(Self.advance(due.id, cycle: due.cycle, next: try row.decode("next_charge_at"),
                                                 status: .paused, reason: "interval is not valid; fix it and resume"))
                    continue
                }
                let plan = Self.plan(interval: interval, startAt: due.startAt, cycle: due.cycle, maxCycles: due.maxCycles,
                                     endAt: due.endAt, now: now, catchUp: catchUp, maxCatchUp: maxCatchUp)
                if let skipped = plan.skipped {
                    result.skipped += skipped.count
                    let reason = catchUp == .latest
                        ? "PAYHOOK_SCHEDULER_CATCH_UP=latest charges only the latest missed cycle"
                        : "more cycles fell due at once than PAYHOOK_SCHEDULER_MAX_CATCH_UP allows; the latest are charged"
                    try await MerchantCallbackOutbox(queue: queue).enqueue(Self.skippedCallback(
                        subscriptionID: due.id, reference: try row.decode("reference"), amountMinor: due.amountMinor,
                        currency: due.currency, cycles: skipped, reason: reason, at: now), on: connection)
                }
                for charge in plan.charges {
                    let key = Charge.idempotencyKey(namespace: namespace, subscriptionID: due.id, cycle: charge.cycle, attempt: 1,
                                                 nonce: Charge.newKeyNonce())
                    charges.append(.object([
                        .init("subscription_id", .int(due.id)), .init("cycle", .int(Int64(charge.cycle))),
                        .init("idempotency_key", .string(key)), .init("amount_minor", .int(due.amountMinor)),
                        .init("currency", .string(due.currency)), .init("provider", .string(due.provider)),
                        .init("scheduled_at", .timestamp(charge.dueAt)),
                    ]))
                    jobs.append(JobRequest(ChargeRecurringArgs(idempotencyKey: key, provider: due.provider, subscriptionID: due.id),
                                           uniqueKey: key, maxAttempts: maxAttempts))
                }
                if plan.status == .active && plan.nextChargeAt <= now { result.stillDue = true }
                advances.append(Self.advance(due.id, cycle: plan.nextCycle, next: plan.nextChargeAt, status: plan.status,
                                             reason: plan.statusReason))
            }
            if !charges.isEmpty {
                try await connection.query(SubscriptionSQL.shared.insertFirstAttempts, [.jsonb(JSONOutput.array(charges).rendered)])
                try await queue.enqueue(jobs, on: connection)
            }
            try await connection.query(SubscriptionSQL.shared.advanceSubscriptions, [.jsonb(JSONOutput.array(advances).rendered)])
            result.created = charges.count
            return result
        }
        if result.created > 0 { metrics?.increment("payhook_charges_scheduled_total", by: UInt64(result.created)) }
        if result.skipped > 0 {
            metrics?.increment("payhook_cycles_skipped_total", by: UInt64(result.skipped))
            logger.warning("missed cycles skipped by the catch-up rule", ["cycles.skipped": .init(result.skipped)])
        }
        return result
    }

    private static func advance(_ id: Int64, cycle: Int, next: Date, status: Subscription.Status, reason: String?) -> JSONOutput {
        .object([
            .init("id", .int(id)), .init("cycle", .int(Int64(cycle))), .init("next_charge_at", .timestamp(next)),
            .init("status", .string(status.rawValue)), .init("status_reason", .optional(reason)),
        ])
    }
}

extension SubscriptionScheduler: Service {
    package var serviceName: String { "scheduler" }
}
