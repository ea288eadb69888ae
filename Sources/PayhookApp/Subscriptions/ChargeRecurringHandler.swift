import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue

/// Runs `charge_recurring` jobs: one attempt to charge one subscription cycle through the
/// provider client of the token's provider, then records what came of it.
///
/// The rules that keep money safe (DESIGN invariants 4 and 5):
/// - The idempotency key is in the `charges` row before any call, and `attempted_at` is
///   committed before the first call. Every retry of the job sends the same key, with the same
///   request (reason and previous transaction reference are frozen on the row).
/// - A charge already settled (`succeeded`, declined, `skipped`) is never sent again: a replayed
///   job, or one whose worker crashed after the provider answered, finishes without a call.
/// - An unknown outcome (`timeout`, `unavailable`, an answer that does not decode) marks the
///   charge `unknown` and retries the job with the queue's backoff under the SAME key, looking
///   the charge up first (`lookUpCharge`) where the provider can. `unauthorized` is retried the
///   same way, so a broken credential ends in a dead letter, never in a guess.
/// - A new key is made only after a definite soft decline: the next dunning attempt
///   (`attempt + 1`, `StoredCredential.Reason.resubmission`), due after
///   `SubscriptionSettings.dunningSchedule`; when the schedule is exhausted the subscription
///   becomes `past_due` and the merchant gets `subscription.past_due`.
/// - A hard decline stops: `past_due` and `subscription.charge_failed`.
/// - A success records the provider's payment (Adyen, PXP: `payments`; Mercado Pago: `orders`)
///   so the confirming webhook updates that row instead of creating another, and links it to
///   the charge. `charges_one_success_per_cycle` refuses a second success of a cycle; should the
///   provider ever report one, the charge keeps the evidence and the job is dead-lettered.
/// - `pending` waits: the job snoozes and the charge is reconciled from what a webhook stored,
///   or by asking the provider, every `pendingRecheck`, at most `maxPendingChecks` times.
///
/// Throughput: the two statements every charge needs (the mark before the call, the
/// settlement after it) are shared by the jobs running at the same moment (`BatchCombiner`);
/// whatever a batch must not decide goes one by one, by the rules above.
///
/// Threading: a `Sendable` value; the worker calls `run` concurrently for different jobs.
struct ChargeRecurringHandler: JobHandler {
    static let kind = SubscriptionScheduler.jobKind
    static let metricName = "payhook_charges_total"

    let pool: PostgresPool
    /// Dunning attempts and merchant callbacks are enqueued on the outcome's transaction.
    let queue: JobQueue
    let clients: PaymentProviderClients
    let settings: SubscriptionSettings
    let metrics: MetricsRegistry?
    let logger: Logger
    let now: @Sendable () -> Date
    /// Runs after the provider answered and before the answer is written: tests use it to
    /// play a worker killed between the two.
    let afterProviderCall: (@Sendable (String) async throws -> Void)?
    /// First attempts of concurrent jobs, loaded and marked attempted in one statement
    /// (`SubscriptionSQL.beginFirstAttempts`). Why: at hundreds of charges per second a
    /// statement per charge, each its own commit, was the database's largest cost.
    private let firstAttempts: BatchCombiner<String, Loaded?>
    /// Successes of concurrent jobs, settled in one transaction.
    private let successes: BatchCombiner<Success, Bool?>

    /// Most charges one batched statement takes.
    static let maxBatch = 64
    /// Batched statements of each kind running at once (each holds a pooled connection), and
    /// the charges it takes to start one beside a running one. Measured with bench/charges
    /// (30,000 charges, 256 in flight): one flush at a time made every charge wait for the
    /// commit before its own; four started for any single charge made batches so small that
    /// PostgreSQL spent 875 µs of CPU per charge (two: 634 µs); four, each started only for 8
    /// waiting charges, gave 1,415/s where two had given 984 – 1,199/s, at 609 µs.
    static let maxFlushes = 4
    static let minConcurrentBatch = 8

    init(pool: PostgresPool, queue: JobQueue, clients: PaymentProviderClients, settings: SubscriptionSettings,
         metrics: MetricsRegistry?, logger: Logger, now: @escaping @Sendable () -> Date = { Date() },
         afterProviderCall: (@Sendable (String) async throws -> Void)? = nil) {
        self.pool = pool
        self.queue = queue
        self.clients = clients
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.afterProviderCall = afterProviderCall
        firstAttempts = BatchCombiner(maxBatch: Self.maxBatch, maxFlushes: Self.maxFlushes,
                                      minConcurrentBatch: Self.minConcurrentBatch) { keys in
            await Self.beginFirstAttempts(keys, pool: pool)
        }
        successes = BatchCombiner(maxBatch: Self.maxBatch, maxFlushes: Self.maxFlushes,
                                  minConcurrentBatch: Self.minConcurrentBatch) { batch in
            await Self.settleSuccesses(batch, pool: pool)
        }
        metrics?.describe(Self.metricName, type: "counter",
                          help: "Recurring charge attempts by provider and outcome (succeeded, pending, declined_soft, declined_hard, unknown, skipped, duplicate_success).")
    }

    /// One charge with its subscription and token, as `SubscriptionSQL.loadCharge` reads it.
    struct Loaded: Sendable {
        let charge: Charge
        let subscriptionStatus: String
        let subscriptionReference: String
        let tokenProvider: String
        let token: String
        let shopperReference: String?
        let customerID: String?
        let tokenStatus: String
        /// Frozen at the first call (`markAttempted`); nil before it, or when no cycle succeeded yet.
        let previousTransactionReference: String?
        /// The subscription's schedule, for the cycle's billing data (`SubscriptionSQL.chargeContextColumns`).
        let interval: SubscriptionInterval?
        let startAt: Date
        let maxCycles: Int?
        /// The token's first successful payment (Mercado Pago's `previous_transaction_reference`).
        let tokenFirstPaymentReference: String?

        var provider: String { charge.provider ?? tokenProvider }

        init(row: PostgresRow) throws(PostgresError) {
            charge = try Charge(row: row)
            subscriptionStatus = try row.decode("subscription_status")
            subscriptionReference = try row.decode("subscription_reference")
            tokenProvider = try row.decode("token_provider")
            token = try row.decode("token")
            shopperReference = try row.decode("shopper_reference")
            customerID = try row.decode("customer_id")
            tokenStatus = try row.decode("token_status")
            previousTransactionReference = try row.decode("previous_transaction_reference")
            interval = SubscriptionInterval.parse(json: try row.decode("subscription_interval"))
            startAt = try row.decode("subscription_start_at")
            maxCycles = try row.decode("subscription_max_cycles")
            tokenFirstPaymentReference = try row.decode("token_first_payment_reference")
        }
    }

    func run(_ job: Job) async throws -> JobOutcome {
        guard let payload = try? job.decodePayload(ChargeJobPayload.self) else {
            return .discard(reason: "payload_invalid: charge_recurring needs an idempotency_key")
        }
        let key = payload.idempotencyKey
        // The common case in one batched statement: a first attempt that is certainly to be sent.
        // Everything else (and a batch that failed) takes the one-by-one path below.
        if let provider = payload.provider.flatMap(ProviderID.init(rawValue:)), clients.client(for: provider) != nil,
           let loaded = await firstAttempts.submit(key) {
            guard let providerID = ProviderID(rawValue: loaded.provider), let client = clients.client(for: providerID) else {
                return .retry(error: "no API client configured for provider \(loaded.provider); set its PAYHOOK_\(loaded.provider.uppercased())_* API credentials")
            }
            return try await attempt(loaded, client: client, marked: true)
        }
        guard let row = try await pool.query(SubscriptionSQL.loadCharge, [.text(key)]).rows.first else {
            return .discard(reason: "not_found: no charge with idempotency key \(key)")
        }
        let loaded = try Loaded(row: row)
        let charge = loaded.charge
        switch charge.status {
        case "succeeded", "declined_soft", "declined_hard", "skipped":
            // Settled earlier (a replay, or a crash after recording): never call again.
            return .succeeded
        default:
            break
        }
        if charge.attemptedAt == nil, let why = Self.skipReason(loaded) {
            if try await !pool.query(SubscriptionSQL.skipCharge, [.int(charge.id), .text(why)]).rows.isEmpty {
                count(loaded.provider, "skipped")
            }
            return .succeeded
        }
        guard let providerID = ProviderID(rawValue: loaded.provider), let client = clients.client(for: providerID) else {
            return .retry(error: "no API client configured for provider \(loaded.provider); set its PAYHOOK_\(loaded.provider.uppercased())_* API credentials")
        }
        if charge.status == "pending", charge.attemptedAt != nil, let paymentID = charge.providerPaymentID {
            return try await recheckPending(loaded, providerPaymentID: paymentID, client: client)
        }
        return try await attempt(loaded, client: client, marked: false)
    }

    /// Why an attempt never sent must not be sent now, or nil.
    static func skipReason(_ loaded: Loaded) -> String? {
        switch loaded.subscriptionStatus {
        case "paused", "canceled", "past_due": return "skipped: subscription is \(loaded.subscriptionStatus)"
        default: break
        }
        guard loaded.tokenStatus == "active" else { return "skipped: vault token is \(loaded.tokenStatus)" }
        return nil
    }

    // MARK: Calling the provider

    /// - Parameter marked: `loaded` comes from `beginFirstAttempts`, which committed the mark
    ///   already (and it is a first call).
    private func attempt(_ loaded: Loaded, client: any PaymentProviderClient, marked: Bool) async throws -> JobOutcome {
        let charge = loaded.charge
        let key = charge.idempotencyKey
        let sentBefore = !marked && charge.attemptedAt != nil
        let previous: String?
        if marked {
            previous = loaded.previousTransactionReference
        } else {
            // Committed before the call: from here on this key may have charged.
            guard let row = try await pool.query(SubscriptionSQL.markAttempted, [.int(charge.id)]).rows.first else {
                return .succeeded  // settled meanwhile by another run of this key
            }
            previous = try row.decode("previous_transaction_reference")
        }
        let credential = ChargeContext.credential(loaded, previous: previous)
        let amount: Money
        do {
            amount = try Money(minorUnits: charge.amountMinor, currency: charge.currency)
        } catch {
            return .discard(reason: "invalid_amount: charge \(charge.id) has currency \(charge.currency)")
        }
        let result: ChargeResult
        do {
            var found: ChargeResult?
            if sentBefore, case .found(let earlier) = try await client.lookUpCharge(
                idempotencyKey: key, providerPaymentID: charge.providerPaymentID) {
                found = earlier
            }
            if let found {
                result = found
            } else {
                result = try await client.charge(storedCredential: credential, amount: amount,
                                                 reference: Self.reference(loaded), idempotencyKey: key)
            }
        } catch {
            return try await recordFailure(error, loaded)
        }
        try await afterProviderCall?(key)
        return try await record(result, loaded)
    }

    /// The merchant reference of a charge: the subscription's reference and the cycle, the same
    /// on every attempt of the cycle (the idempotency key tells attempts apart).
    static func reference(_ loaded: Loaded) -> String {
        "\(loaded.subscriptionReference)-c\(loaded.charge.cycle)"
    }

    private func recordFailure(_ error: ProviderAPIError, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let message = "\(loaded.provider) charge \(charge.idempotencyKey): \(error)"
        switch error.kind {
        case .timeout, .unavailable, .invalidResponse:
            // The provider may have executed it: unknown until a retry with this key says.
            try await pool.query(SubscriptionSQL.recordOpen, [.int(charge.id), .text("unknown"), .text(message), .null, .null])
            count(loaded.provider, "unknown")
            logger.warning("charge outcome unknown; retrying with the same idempotency key", [
                "provider": .string(loaded.provider), "charge.id": .int(charge.id), "error.kind": .string(error.kind.rawValue),
            ])
            return .retry(error: "outcome unknown, retried with the same idempotency key: \(message)")
        case .unauthorized, .notFound:
            try await pool.query(SubscriptionSQL.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .retry(error: message)
        case .unsupported:
            try await pool.query(SubscriptionSQL.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .discard(reason: "unsupported: \(message)")
        }
    }

    // MARK: Pending charges

    private func recheckPending(_ loaded: Loaded, providerPaymentID: String,
                                client: any PaymentProviderClient) async throws -> JobOutcome {
        let charge = loaded.charge
        let checks = try await pool.query(SubscriptionSQL.countCheck, [.int(charge.id)]).rows.first?.decode("calls", as: Int.self) ?? 0
        if let settled = try await reconcile(loaded, providerPaymentID: providerPaymentID, client: client) {
            return try await record(settled, loaded)
        }
        guard checks <= settings.maxPendingChecks else {
            return .discard(reason: "still_pending: \(loaded.provider) charge \(charge.idempotencyKey) (\(providerPaymentID)) is pending after \(settings.maxPendingChecks) checks; reconcile it at the provider")
        }
        return .snooze(settings.pendingRecheck)
    }

    /// A final answer for a pending charge, from what a webhook stored or from the provider; nil
    /// while it is still pending (or nobody can tell).
    private func reconcile(_ loaded: Loaded, providerPaymentID: String,
                           client: any PaymentProviderClient) async throws -> ChargeResult? {
        let stored = try await pool.query(SubscriptionSQL.storedProviderStatus, [.text(loaded.provider), .text(providerPaymentID)])
            .rows.first?.decode("status", as: String?.self)
        if let stored, let status = PaymentStatus(rawValue: stored), let outcome = Self.outcome(of: status) {
            return ChargeResult(outcome: outcome, providerPaymentID: providerPaymentID, providerStatus: "webhook:\(stored)")
        }
        do {
            // Found: the provider's own answer, final or still pending (Mercado Pago's order
            // ids are not payment ids, so `fetchPayment` is only for providers without a lookup).
            if case .found(let found) = try await client.lookUpCharge(
                idempotencyKey: loaded.charge.idempotencyKey, providerPaymentID: providerPaymentID) {
                return found.outcome == .pending ? nil : found
            }
            let snapshot = try await client.fetchPayment(id: providerPaymentID)
            if let status = snapshot.status, let outcome = Self.outcome(of: status) {
                return ChargeResult(outcome: outcome, providerPaymentID: providerPaymentID,
                                    providerStatus: snapshot.providerStatus ?? status.rawValue, declineCode: snapshot.statusDetail)
            }
        } catch {
            // Unsupported look-ups (Adyen) and failures leave it to the webhook and the next check.
        }
        return nil
    }

    /// Final canonical statuses as charge outcomes. A decline reported this way carries no
    /// classification, so it counts as soft: dunning retries, and a hard reason comes back hard.
    static func outcome(of status: PaymentStatus) -> ChargeOutcome? {
        switch status {
        case .authorized, .captured, .partiallyRefunded, .refunded, .chargedBack: .succeeded
        case .declined, .failed, .canceled, .expired: .declinedSoft
        case .pending: nil
        }
    }

    // MARK: Recording outcomes

    private func record(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        switch result.outcome {
        case .succeeded: return try await recordSuccess(result, loaded)
        case .pending:
            let charge = loaded.charge
            try await pool.query(SubscriptionSQL.recordOpen, [
                .int(charge.id), .text("pending"), .null, result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus),
            ])
            count(loaded.provider, "pending")
            return .snooze(settings.pendingRecheck)
        case .declinedSoft: return try await recordSoftDecline(result, loaded)
        case .declinedHard: return try await recordHardDecline(result, loaded)
        }
    }

    private func recordSuccess(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let provider = loaded.provider
        let paymentID = result.providerPaymentID
        let recorded: Bool
        do {
            recorded = try await settleSuccess(result, loaded)
        } catch {
            guard let refused = error as? PostgresError, refused.kind == .uniqueViolation,
                  refused.constraint == "charges_one_success_per_cycle" else { throw error }
            let message = "duplicate_success: \(provider) reported a second successful charge for subscription \(charge.subscriptionID) cycle \(charge.cycle) (key \(charge.idempotencyKey), payment \(paymentID ?? "?")); refund one"
            try await pool.query(SubscriptionSQL.recordDuplicateSuccess, [
                .int(charge.id), .text(message), paymentID.map(PostgresValue.text) ?? .null,
            ])
            count(provider, "duplicate_success")
            logger.error("second successful charge for one cycle", [
                "provider": .string(provider), "subscription.id": .int(charge.subscriptionID), "charge.id": .int(charge.id),
            ])
            return .discard(reason: message)
        }
        if recorded { count(provider, "succeeded") }
        return .succeeded
    }

    /// Settles a successful charge: under the processor's lock of the payment (or order), upsert
    /// the row the later webhook will update, then mark the charge and link it; in a batch with
    /// other jobs' successes when it can. False when the charge was settled already.
    private func settleSuccess(_ result: ChargeResult, _ loaded: Loaded) async throws -> Bool {
        let charge = loaded.charge
        let provider = loaded.provider
        guard let paymentID = result.providerPaymentID else {
            return try await !pool.query(SubscriptionSQL.recordSettled, [
                .int(charge.id), .text("succeeded"), .null, .text(result.providerStatus), .null,
            ]).rows.isEmpty
        }
        let status = Self.paymentStatus(result.providerStatus).rawValue
        let asOrder = provider == ProviderID.mercadopago.rawValue
        let success = Success(chargeID: charge.id, provider: provider, providerPaymentID: paymentID,
                              merchantReference: asOrder ? nil : Self.reference(loaded), providerStatus: result.providerStatus,
                              status: status, asOrder: asOrder)
        if let settled = await successes.submit(success) { return settled }
        // The batch failed: this charge alone, where a second success of the cycle is told apart.
        return try await Self.settle([success], pool: pool).contains(charge.id)
    }

    private func recordSoftDecline(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let schedule = settings.dunningSchedule
        let maxAttempts = settings.chargeMaxAttempts
        let queue = self.queue
        let now = self.now()
        let recorded = try await pool.transaction { connection in
            guard try await !connection.query(SubscriptionSQL.recordSettled, [
                .int(charge.id), .text("declined_soft"), result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus), result.declineCode.map(PostgresValue.text) ?? .null,
            ]).rows.isEmpty else { return false }
            // A subscription canceled or paused meanwhile is not chased.
            guard loaded.subscriptionStatus == "active" || loaded.subscriptionStatus == "completed" else { return true }
            if charge.attempt <= schedule.count {
                let next = charge.attempt + 1
                let key = Charge.idempotencyKey(subscriptionID: charge.subscriptionID, cycle: charge.cycle, attempt: next)
                let due = now.addingTimeInterval(Double(schedule[charge.attempt - 1].components.seconds))
                try await connection.query(SubscriptionSQL.insertRetryAttempt, [
                    .int(charge.subscriptionID), .int(Int64(charge.cycle)), .int(Int64(next)), .text(key),
                    .int(charge.amountMinor), .text(charge.currency), .text(loaded.provider), .timestamptz(due),
                ])
                try await queue.enqueue(kind: Self.kind, payload: ChargeJobPayload(
                    idempotencyKey: key, provider: loaded.provider, subscriptionID: charge.subscriptionID).json,
                    uniqueKey: key, runAt: due, maxAttempts: maxAttempts, on: connection)
            } else {
                let reason = "dunning exhausted after \(charge.attempt) attempt(s) for cycle \(charge.cycle): \(result.declineCode ?? result.providerStatus)"
                if try await !connection.query(SubscriptionSQL.markPastDue, [.int(charge.subscriptionID), .text(reason)]).rows.isEmpty {
                    try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                        "subscription.past_due", webhookID: "subscription.past_due:\(charge.subscriptionID):c\(charge.cycle)",
                        loaded, result, reason: reason, at: now), on: connection)
                }
            }
            return true
        }
        if recorded { count(loaded.provider, "declined_soft") }
        return .succeeded
    }

    private func recordHardDecline(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let queue = self.queue
        let now = self.now()
        let recorded = try await pool.transaction { connection in
            guard try await !connection.query(SubscriptionSQL.recordSettled, [
                .int(charge.id), .text("declined_hard"), result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus), result.declineCode.map(PostgresValue.text) ?? .null,
            ]).rows.isEmpty else { return false }
            let reason = "hard decline of cycle \(charge.cycle) attempt \(charge.attempt): \(result.declineCode ?? result.providerStatus)"
            if try await !connection.query(SubscriptionSQL.markPastDue, [.int(charge.subscriptionID), .text(reason)]).rows.isEmpty {
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.charge_failed",
                    webhookID: "subscription.charge_failed:\(charge.subscriptionID):c\(charge.cycle):a\(charge.attempt)",
                    loaded, result, reason: reason, at: now), on: connection)
            }
            return true
        }
        if recorded { count(loaded.provider, "declined_hard") }
        return .succeeded
    }

    static func callback(_ type: String, webhookID: String, _ loaded: Loaded, _ result: ChargeResult, reason: String,
                         at date: Date) -> MerchantCallback {
        let charge = loaded.charge
        return MerchantCallback(
            webhookID: webhookID, type: type,
            data: .object([
                .init("subscription_id", .int(charge.subscriptionID)), .init("reference", .string(loaded.subscriptionReference)),
                .init("status", .string(Subscription.Status.pastDue.rawValue)), .init("reason", .string(reason)),
                .init("cycle", .int(Int64(charge.cycle))), .init("attempt", .int(Int64(charge.attempt))),
                .init("charge_id", .int(charge.id)), .init("provider", .string(loaded.provider)),
                .init("provider_payment_id", .optional(result.providerPaymentID)),
                .init("decline_code", .optional(result.declineCode)),
                .init("amount", .object([.init("value", .int(charge.amountMinor)), .init("currency", .string(charge.currency))])),
            ]),
            orderID: nil, subscriptionID: charge.subscriptionID, url: nil, occurredAt: date)
    }

    /// The canonical status of a successful charge's payment, from the provider's word: a
    /// capture where the provider says the money moved, an authorisation otherwise.
    static func paymentStatus(_ providerStatus: String) -> PaymentStatus {
        switch providerStatus.lowercased() {
        case "captured", "processed", "approved", "accredited", "settled": .captured
        default: .authorized
        }
    }

    // MARK: Batched statements

    /// A success to settle: the charge and the payment (Adyen, PXP) or order (Mercado Pago) it made.
    struct Success: Sendable {
        let chargeID: Int64
        let provider: String
        let providerPaymentID: String
        let merchantReference: String?
        let providerStatus: String
        /// The canonical status of the payment or order row.
        let status: String
        let asOrder: Bool

        /// The processor's advisory-lock key of the row the webhook will update.
        var lockKey: String { "\(asOrder ? "order" : "payment"):\(provider):\(providerPaymentID)" }
    }

    /// Marks the first attempts of `keys` in one statement. One element per key: the loaded
    /// charge when it was marked, nil when that key takes the one-by-one path (not a plain first
    /// attempt, or the statement failed: the one-by-one path then reports the failure).
    static func beginFirstAttempts(_ keys: [String], pool: PostgresPool) async -> [Loaded?] {
        var keyArray = PostgresArray(.text, capacity: keys.count * 40)
        var byKey: [String: Loaded] = [:]
        do {
            for key in keys { try keyArray.append(key) }
            for row in try await pool.query(SubscriptionSQL.beginFirstAttempts, [.array(keyArray)]).rows {
                let loaded = try Loaded(row: row)
                byKey[loaded.charge.idempotencyKey] = loaded
            }
        } catch {
            // A row that does not decode leaves its charge marked: the one-by-one path sees
            // `attempted_at` and looks the key up before sending, as after a crash.
            return keys.map { _ in nil }
        }
        return keys.map { byKey[$0] }
    }

    /// Settles `batch` through `settle`, for `BatchCombiner`. One element per success: true when
    /// settled, false when it was settled already, nil when the batch failed and the success
    /// must be settled alone.
    static func settleSuccesses(_ batch: [Success], pool: PostgresPool) async -> [Bool?] {
        guard let settled = try? await settle(batch, pool: pool) else { return batch.map { _ in nil } }
        return batch.map { settled.contains($0.chargeID) }
    }

    /// Settles `successes` in one transaction: the advisory locks of every payment and order (in
    /// the processor's sorted order), then one statement per kind.
    /// - Returns: the charges settled (those settled earlier are not).
    /// - Throws: `PostgresError`; nothing is settled then.
    static func settle(_ batch: [Success], pool: PostgresPool) async throws -> Set<Int64> {
        func rows(_ successes: [Success]) -> String {
            JSONDocument.array(successes.map { success in
                var fields: [JSONDocument.Member] = [
                    .init("charge_id", .int(success.chargeID)), .init("provider", .string(success.provider)),
                    .init(success.asOrder ? "provider_order_id" : "provider_payment_id", .string(success.providerPaymentID)),
                    .init("provider_status", .string(success.providerStatus)), .init("status", .string(success.status)),
                ]
                if let reference = success.merchantReference { fields.append(.init("merchant_reference", .string(reference))) }
                return .object(fields)
            }).rendered
        }
        let payments = batch.filter { !$0.asOrder }
        let orders = batch.filter(\.asOrder)
        return try await pool.transaction { connection in
            try await connection.query(ProcessingSQL.lockKeys, [.jsonb(JSONString.array(batch.map(\.lockKey)))])
            var settled = Set<Int64>()
            if !payments.isEmpty {
                for row in try await connection.query(SubscriptionSQL.settleSuccessesWithPayments, [.jsonb(rows(payments))]).rows {
                    settled.insert(try row.decode("id"))
                }
            }
            if !orders.isEmpty {
                for row in try await connection.query(SubscriptionSQL.settleSuccessesWithOrders, [.jsonb(rows(orders))]).rows {
                    settled.insert(try row.decode("id"))
                }
            }
            return settled
        }
    }

    private func count(_ provider: String, _ outcome: String) {
        metrics?.increment(Self.metricName, [("provider", provider), ("outcome", outcome)])
    }
}
