import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
package import PayhookQueue
import PayhookOperations
import PayhookAdmin
import PayhookProcessing

/// Runs `charge_recurring` jobs: one attempt to charge one subscription cycle through the
/// provider client of the token's provider, then records what came of it.
///
/// The rules that keep money safe (DESIGN invariants 4 and 5):
/// - The idempotency key is in the `charges` row before any call, and `attempted_at` is
///   committed before the first call. Every retry of the job sends the same key, with the same
///   request (reason and previous transaction reference are frozen on the row).
/// - A charge already settled (`succeeded`, declined, `skipped`) is never sent again: a replayed
///   job, or one whose worker crashed after the provider answered, finishes without a call.
/// - An attempt never sent waits while its subscription is paused (resuming wakes it: the cycle
///   fell due while the subscription was active, so it is owed), and is skipped with a
///   `subscription.charge_skipped` callback once the subscription is canceled or past due.
/// - An unknown outcome (`timeout`, `unavailable`, an answer that does not decode) marks the
///   charge `unknown` and retries the job with the queue's backoff. Before anything is sent
///   again for a charge that may have executed (unknown, or pending without a provider id),
///   it is reconciled: a payment a webhook stored for it settles it, then the provider's lookup
///   (`lookUpCharge`); only a lookup that says "never executed" or a provider that cannot be
///   asked lets the SAME key go out again, and only inside the provider's idempotency window
///   (`SubscriptionSettings.idempotencyWindows`, from the first attempt). After the window the
///   key is never sent again: the job becomes a `charge_outcome_unknown` dead letter, settled
///   by the provider's webhook (the processor wakes the job), a replay (reconciliation only)
///   or `payhook charges resolve`. `unauthorized` is retried the same way, so a broken
///   credential ends in a dead letter, never in a guess.
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
package struct ChargeRecurringHandler: JobHandler {
    package static let kind = JobKind.chargeRecurring.rawValue
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
    /// (`SubscriptionSQL.shared.beginFirstAttempts`). Why: at hundreds of charges per second a
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
            await Self.beginFirstAttempts(keys, at: now(), pool: pool)
        }
        successes = BatchCombiner(maxBatch: Self.maxBatch, maxFlushes: Self.maxFlushes,
                                  minConcurrentBatch: Self.minConcurrentBatch) { batch in
            await Self.settleSuccesses(batch, pool: pool)
        }
        metrics?.describe(Self.metricName, type: "counter",
                          help: "Recurring charge attempts by provider and outcome (succeeded, pending, declined_soft, declined_hard, unknown, skipped, duplicate_success, outcome_unknown).")
    }

    /// One charge with its subscription and token, as `SubscriptionSQL.shared.loadCharge` reads it.
    package struct Loaded: Sendable {
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
        /// Which kind of id the token is (`vault_tokens.token_kind`), nil where the provider has one.
        let tokenKind: VaultTokenKind?
        /// The payment profile a Mercado Pago card id charged through, once an order showed it.
        let tokenPaymentProfileID: String?

        /// What the provider's charge call accepts as the stored credential: a Mercado Pago
        /// card id only through its payment profile; nil when there is nothing it accepts.
        var chargeableToken: String? {
            switch tokenKind {
            case .cardID?: tokenPaymentProfileID
            case .paymentProfile?, nil: token
            }
        }

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
            tokenKind = (try row.decode("token_kind", as: String?.self)).flatMap(VaultTokenKind.init(rawValue:))
            tokenPaymentProfileID = try row.decode("token_payment_profile_id")
        }
    }

    package func run(_ job: Job) async throws -> JobOutcome {
        guard let payload = try? job.decodeArgs(ChargeRecurringArgs.self) else {
            return .discard(.payloadInvalid, message: "\(Self.kind) needs an idempotency_key")
        }
        let key = payload.idempotencyKey
        // The common case in one batched statement: a first attempt that is certainly to be sent.
        // Everything else (and a batch that failed) takes the one-by-one path below.
        if let provider = payload.provider.flatMap(ProviderID.init(rawValue:)), clients.client(for: provider) != nil,
           let loaded = await firstAttempts.submit(key) {
            guard let providerID = ProviderID(rawValue: loaded.provider), let client = clients.client(for: providerID) else {
                return .retry(error: "no API client configured for provider \(loaded.provider); set its PAYHOOK_\(loaded.provider.uppercased())_* API credentials")
            }
            return try await send(loaded, client: client, marked: true)
        }
        guard let row = try await pool.query(SubscriptionSQL.shared.loadCharge, [.text(key)]).rows.first else {
            return .discard(.notFound, message: "no charge with idempotency key \(key)")
        }
        let loaded = try Loaded(row: row)
        let charge = loaded.charge
        if Charge.Status(rawValue: charge.status)?.isSettled == true {
            // Settled earlier (a replay, or a crash after recording): never call again.
            return .succeeded
        }
        if charge.attemptedAt == nil, let hold = Self.hold(loaded) {
            switch hold {
            case .wait:
                // Paused (by an operator or a disabled token): the cycle fell due while the
                // subscription was active, so it is owed; it waits, and resuming wakes it.
                return .snooze(settings.pendingRecheck)
            case .skip(let why):
                return try await skip(loaded, because: why)
            }
        }
        guard let providerID = ProviderID(rawValue: loaded.provider), let client = clients.client(for: providerID) else {
            return .retry(error: "no API client configured for provider \(loaded.provider); set its PAYHOOK_\(loaded.provider.uppercased())_* API credentials")
        }
        guard charge.attemptedAt != nil else { return try await send(loaded, client: client, marked: false) }
        return try await reconcile(loaded, client: client)
    }

    /// Why an attempt never sent must not be sent now.
    package enum Hold: Equatable {
        /// Not now: the subscription is paused, or its token is not usable while it is active.
        case wait
        /// Never: the subscription was canceled or went past due after the cycle was scheduled.
        case skip(String)
    }

    /// What stops a never-sent attempt from being sent now, or nil when nothing does.
    static func hold(_ loaded: Loaded) -> Hold? {
        switch Subscription.Status(rawValue: loaded.subscriptionStatus) {
        case .paused: return .wait
        case .canceled, .pastDue: return .skip("skipped: subscription is \(loaded.subscriptionStatus)")
        default: break
        }
        if loaded.chargeableToken == nil {
            return .skip("skipped: the token is a Mercado Pago card id with no payment profile; merchant-initiated charges "
                + "send automatic_payments.payment_profile_id, and a card id there is refused. Register the customer's "
                + "payment profile and move the subscription to it")
        }
        return loaded.tokenStatus == VaultTokenStatus.active.rawValue ? nil : .wait
    }

    /// Skips a never-sent attempt for good and tells the merchant (`subscription.charge_skipped`),
    /// in one transaction: a cycle that fell due is never dropped silently.
    private func skip(_ loaded: Loaded, because why: String) async throws -> JobOutcome {
        let charge = loaded.charge
        let queue = self.queue
        let now = self.now()
        let skipped = try await pool.transaction { connection in
            guard try await !connection.query(SubscriptionSQL.shared.skipCharge, [.int(charge.id), .text(why)]).rows.isEmpty else {
                return false
            }
            let status = Subscription.Status(rawValue: loaded.subscriptionStatus) ?? .canceled
            try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                "subscription.charge_skipped",
                webhookID: "subscription.charge_skipped:\(charge.subscriptionID):c\(charge.cycle):a\(charge.attempt)",
                loaded, ChargeResult(outcome: .declinedHard, providerStatus: Charge.Status.skipped.rawValue), reason: why, status: status, at: now),
                on: connection)
            return true
        }
        if skipped { count(loaded.provider, .skipped) }
        return .succeeded
    }

    // MARK: Calling the provider

    /// Sends the charge with its key and records the answer. The caller has made sure it may be
    /// sent: a first attempt, or a charge that reconciliation showed was never executed (or
    /// cannot be asked about) while its key is inside the provider's idempotency window.
    /// - Parameter marked: `loaded` comes from `beginFirstAttempts`, which committed the mark
    ///   already (and it is a first call).
    private func send(_ loaded: Loaded, client: any PaymentProviderClient, marked: Bool) async throws -> JobOutcome {
        let charge = loaded.charge
        let key = charge.idempotencyKey
        // Another worker may hold the job once its lease is gone: send nothing then.
        guard JobLease.current?.isHeld ?? true else {
            return .retry(error: "not sent: \(JobLeaseExpired())")
        }
        let previous: String?
        if marked {
            previous = loaded.previousTransactionReference
        } else {
            // Committed before the call: from here on this key may have charged.
            guard let row = try await pool.query(SubscriptionSQL.shared.markAttempted, [.int(charge.id), .timestamptz(now())]).rows.first else {
                return .succeeded  // settled meanwhile by another run of this key
            }
            previous = try row.decode("previous_transaction_reference")
        }
        let credential = ChargeContext.credential(loaded, previous: previous)
        let amount: Money
        do {
            amount = try Money(minorUnits: charge.amountMinor, currency: charge.currency)
        } catch {
            return .discard(.invalidAmount, message: "charge \(charge.id) has currency \(charge.currency)")
        }
        let result: ChargeResult
        let reference = Self.reference(loaded)
        let call: @Sendable () async throws -> ChargeResult = {
            try await client.charge(storedCredential: credential, amount: amount, reference: reference, idempotencyKey: key)
        }
        do {
            // Never two calls with one key at once: the call is refused or cancelled when the
            // lease ends (a cancelled call's outcome is unknown, like a timeout).
            if let lease = JobLease.current {
                result = try await lease.whileHeld(call)
            } else {
                result = try await call()
            }
        } catch let error as ProviderAPIError {
            return try await recordFailure(error, loaded)
        } catch is JobLeaseExpired {
            return .retry(error: "not sent: \(JobLeaseExpired())")
        }
        try await afterProviderCall?(key)
        return try await record(result, loaded)
    }

    /// The merchant reference of a charge: the subscription's reference and the cycle, the same
    /// on every attempt of the cycle (the idempotency key tells attempts apart).
    static func reference(_ loaded: Loaded) -> String {
        loaded.charge.merchantReference ?? "\(loaded.subscriptionReference)-c\(loaded.charge.cycle)"
    }

    private func recordFailure(_ error: ProviderAPIError, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let message = "\(loaded.provider) charge \(charge.idempotencyKey): \(error)"
        switch error.kind {
        case .timeout, .unavailable, .invalidResponse:
            // The provider may have executed it: unknown until a retry with this key says.
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(Charge.Status.unknown.rawValue), .text(message), .null, .null])
            count(loaded.provider, .unknown)
            logger.warning("charge outcome unknown; retrying with the same idempotency key", [
                "provider": .string(loaded.provider), "charge.id": .int(charge.id), "error.kind": .string(error.kind.rawValue),
            ])
            return .retry(error: "outcome unknown, retried with the same idempotency key: \(message)")
        case .unauthorized, .notFound:
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .retry(error: message)
        case .unsupported:
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .discard(.unsupported, message: message)
        }
    }

    // MARK: Reconciling a charge that may have executed

    /// Settles a charge that was sent before and has no final answer (unknown, or pending),
    /// from what is known before anything is sent again: what a webhook stored, then the
    /// provider's lookup. Sends the same key again only when neither knows the charge and the
    /// key is still inside the provider's idempotency window.
    private func reconcile(_ loaded: Loaded, client: any PaymentProviderClient) async throws -> JobOutcome {
        let charge = loaded.charge
        let checks = try await pool.query(SubscriptionSQL.shared.countCheck, [.int(charge.id)]).rows.first?.decode("calls", as: Int.self) ?? 0
        if let stored = try await storedResult(loaded) {
            return try await settle(stored, loaded, checks: checks)
        }
        let lookup: ChargeLookup
        do {
            lookup = try await client.lookUpCharge(
                idempotencyKey: charge.idempotencyKey, providerPaymentID: charge.providerPaymentID,
                reference: Self.reference(loaded), sentAt: charge.attemptedAt ?? now())
        } catch {
            // Nobody can tell: wait and ask again; never send on it.
            let message = "\(loaded.provider) charge \(charge.idempotencyKey): look-up failed: \(error)"
            guard insideWindow(loaded) else { return try await outcomeUnknown(loaded, lastError: message) }
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .retry(error: "outcome unknown, not sent again until the provider answers: \(message)")
        }
        switch lookup {
        case .found(let result):
            // The provider's own answer, final or still pending (a pending one is asked again
            // at the next check; Mercado Pago's order ids are no payment ids for `fetchPayment`).
            return try await settle(result, loaded, checks: checks)
        case .notFound, .unsupported:
            if let paymentID = charge.providerPaymentID {
                // The provider answered with an id: it has the charge, nothing is sent again.
                if let fetched = await fetchedResult(paymentID, client: client) {
                    return try await settle(fetched, loaded, checks: checks)
                }
                return try await stillPending(loaded, checks: checks)
            }
            guard insideWindow(loaded) else {
                return try await outcomeUnknown(loaded, lastError: charge.lastError ?? "no answer from \(loaded.provider)")
            }
            if charge.status == Charge.Status.pending.rawValue, checks > settings.maxPendingChecks {
                return try await stillPending(loaded, checks: checks)
            }
            return try await send(loaded, client: client, marked: false)
        }
    }

    /// Records what reconciliation found. A final answer also resolves the job's open dead letter
    /// (a `charge_outcome_unknown` one woken by the provider's webhook): nothing is left to replay.
    private func settle(_ result: ChargeResult, _ loaded: Loaded, checks: Int) async throws -> JobOutcome {
        let outcome = try await record(result, loaded, checks: checks)
        if result.outcome != .pending {
            _ = try await pool.withConnection { connection in
                try await DeadLetterStore.resolveJobLetter(kind: Self.kind, uniqueKey: loaded.charge.idempotencyKey, as: .discarded, by: "payhook",
                    note: "charge settled by reconciliation as \(result.outcome.rawValue) (\(result.providerStatus))", on: connection)
            }
        }
        return outcome
    }

    /// True while the charge's key may still be sent: its first attempt is younger than the
    /// provider's idempotency window.
    private func insideWindow(_ loaded: Loaded) -> Bool {
        guard let first = loaded.charge.attemptedAt else { return true }
        return now() < first.addingTimeInterval(Double(settings.idempotencyWindow(loaded.provider).components.seconds))
    }

    /// The charge outlived its key: dead letter `charge_outcome_unknown`, the charge `unknown`.
    private func outcomeUnknown(_ loaded: Loaded, lastError: String) async throws -> JobOutcome {
        let charge = loaded.charge
        let window = settings.idempotencyWindow(loaded.provider).components.seconds
        let discard = JobOutcome.discard(.chargeOutcomeUnknown, message: "\(loaded.provider) charge \(charge.id) (key \(charge.idempotencyKey)) was first sent at \(charge.attemptedAt.map(JSONOutput.format) ?? "?"), longer ago than \(loaded.provider) keeps idempotency keys (\(window / 3600) h); payhook will not send it again. It settles when the provider's webhook for reference \(Self.reference(loaded)) arrives, on replay if a look-up answers, or by `payhook charges resolve \(charge.id) --as succeeded|failed --note …`. Last error: \(lastError)")
        let message = discard.recordedError ?? ""
        try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(Charge.Status.unknown.rawValue), .text(message), .null, .null])
        count(loaded.provider, "outcome_unknown")
        logger.error("charge outcome unknown after the idempotency window; not sent again", [
            "provider": .string(loaded.provider), "charge.id": .int(charge.id),
        ])
        return discard
    }

    private func stillPending(_ loaded: Loaded, checks: Int) async throws -> JobOutcome {
        let charge = loaded.charge
        guard checks <= settings.maxPendingChecks else {
            return .discard(.stillPending, message: "\(loaded.provider) charge \(charge.idempotencyKey) (\(charge.providerPaymentID ?? "no provider id")) is pending after \(settings.maxPendingChecks) checks; reconcile it at the provider")
        }
        return .snooze(settings.pendingRecheck)
    }

    /// What a webhook stored for the charge, as a charge result; nil when nothing was stored.
    private func storedResult(_ loaded: Loaded) async throws -> ChargeResult? {
        guard let row = try await pool.query(SubscriptionSQL.shared.storedChargePayment, [.int(loaded.charge.id)]).rows.first else {
            return nil
        }
        let paymentID: String = try row.decode("provider_payment_id")
        let stored: String = try row.decode("status")
        guard let status = PaymentStatus(rawValue: stored) else { return nil }
        return ChargeResult(outcome: Self.outcome(of: status) ?? .pending, providerPaymentID: paymentID,
                            providerStatus: "webhook:\(stored)")
    }

    /// The payment `paymentID` as the provider reports it, when final; nil while pending or
    /// when the provider cannot say (unsupported look-ups, failures: the next check asks again).
    private func fetchedResult(_ paymentID: String, client: any PaymentProviderClient) async -> ChargeResult? {
        guard let snapshot = try? await client.fetchPayment(id: paymentID), let status = snapshot.status,
              let outcome = Self.outcome(of: status) else { return nil }
        return ChargeResult(outcome: outcome, providerPaymentID: paymentID,
                            providerStatus: snapshot.providerStatus ?? status.rawValue, declineCode: snapshot.statusDetail)
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

    /// - Parameter checks: look-ups made so far when this result comes from reconciliation (a
    ///   pending one then counts against `maxPendingChecks`); nil for a fresh answer.
    private func record(_ result: ChargeResult, _ loaded: Loaded, checks: Int? = nil) async throws -> JobOutcome {
        switch result.outcome {
        case .succeeded: return try await recordSuccess(result, loaded)
        case .pending:
            let charge = loaded.charge
            try await pool.query(SubscriptionSQL.shared.recordOpen, [
                .int(charge.id), .text(Charge.Status.pending.rawValue), .null, result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus),
            ])
            if let checks { return try await stillPending(loaded, checks: checks) }
            count(loaded.provider, .pending)
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
            let discard = JobOutcome.discard(.duplicateSuccess, message: "\(provider) reported a second successful charge for subscription \(charge.subscriptionID) cycle \(charge.cycle) (key \(charge.idempotencyKey), payment \(paymentID ?? "?")); refund one")
            let message = discard.recordedError ?? ""
            try await pool.query(SubscriptionSQL.shared.recordDuplicateSuccess, [
                .int(charge.id), .text(message), paymentID.map(PostgresValue.text) ?? .null,
            ])
            count(provider, "duplicate_success")
            logger.error("second successful charge for one cycle", [
                "provider": .string(provider), "subscription.id": .int(charge.subscriptionID), "charge.id": .int(charge.id),
            ])
            return discard
        }
        if recorded { count(provider, .succeeded) }
        return .succeeded
    }

    /// Settles a successful charge: under the processor's lock of the payment (or order), upsert
    /// the row the later webhook will update, then mark the charge and link it; in a batch with
    /// other jobs' successes when it can. False when the charge was settled already.
    private func settleSuccess(_ result: ChargeResult, _ loaded: Loaded) async throws -> Bool {
        let charge = loaded.charge
        guard let paymentID = result.providerPaymentID else {
            return try await !pool.query(SubscriptionSQL.shared.recordSettled, [
                .int(charge.id), .text(Charge.Status.succeeded.rawValue), .null, .text(result.providerStatus), .null,
            ]).rows.isEmpty
        }
        let success = Self.success(loaded, providerPaymentID: paymentID, providerStatus: result.providerStatus)
        if let settled = await successes.submit(success) { return settled }
        // The batch failed: this charge alone, where a second success of the cycle is told apart.
        return try await Self.settle([success], pool: pool).contains(charge.id)
    }

    private func recordSoftDecline(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let settings = self.settings
        let queue = self.queue
        let now = self.now()
        let recorded = try await pool.transaction { connection in
            try await Self.settleSoftDecline(result, loaded, settings: settings, queue: queue, at: now, on: connection)
        }
        if recorded { count(loaded.provider, .declinedSoft) }
        return .succeeded
    }

    /// Records a soft decline of `loaded` on `connection` (inside the caller's transaction) and
    /// queues what follows: the next dunning attempt under a new key, or, with the schedule
    /// exhausted, `past_due` and a `subscription.past_due` callback. Also what an operator's
    /// `charges resolve --as failed` does.
    /// - Returns: false when the charge was settled already (nothing written).
    static func settleSoftDecline(_ result: ChargeResult, _ loaded: Loaded, settings: SubscriptionSettings, queue: JobQueue,
                                  at now: Date, on connection: PostgresConnection) async throws -> Bool {
        let charge = loaded.charge
        let schedule = settings.dunningSchedule
        guard try await !connection.query(SubscriptionSQL.shared.recordSettled, [
            .int(charge.id), .text(Charge.Status.declinedSoft.rawValue), result.providerPaymentID.map(PostgresValue.text) ?? .null,
            .text(result.providerStatus), result.declineCode.map(PostgresValue.text) ?? .null,
        ]).rows.isEmpty else { return false }
        // A canceled subscription is not chased. A paused one keeps its cycle: the next attempt
        // is queued as usual and waits while paused (`hold`), resuming wakes it, and the merchant
        // hears of the decline now, since nothing else would tell them until the retry settles.
        let status = Subscription.Status(rawValue: loaded.subscriptionStatus)
        switch status {
        case .active, .completed, .paused: break
        default: return true
        }
        if charge.attempt <= schedule.count {
            let next = charge.attempt + 1
            let key = Charge.idempotencyKey(namespace: try await InstallationNamespace.load(on: connection),
                                            subscriptionID: charge.subscriptionID, cycle: charge.cycle, attempt: next,
                                            nonce: Charge.newKeyNonce())
            let due = now.addingTimeInterval(Double(schedule[charge.attempt - 1].components.seconds))
            // Keys carry a fresh nonce, so only the attempt's row tells that it exists already;
            // a job is queued only for the row this call wrote.
            let inserted = try await !connection.query(SubscriptionSQL.shared.insertRetryAttempt, [
                .int(charge.subscriptionID), .int(Int64(charge.cycle)), .int(Int64(next)), .text(key),
                .int(charge.amountMinor), .text(charge.currency), .text(loaded.provider), .timestamptz(due),
            ]).rows.isEmpty
            if inserted {
                try await queue.enqueue(ChargeRecurringArgs(
                    idempotencyKey: key, provider: loaded.provider, subscriptionID: charge.subscriptionID),
                    uniqueKey: key, runAt: due, maxAttempts: settings.chargeMaxAttempts, on: connection)
            }
            if status == .paused {
                let reason = "declined while the subscription is paused: \(result.declineCode ?? result.providerStatus); attempt \(next) of cycle \(charge.cycle) is due at \(JSONOutput.format(due)) and runs once resumed"
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.charge_failed",
                    webhookID: "subscription.charge_failed:\(charge.subscriptionID):c\(charge.cycle):a\(charge.attempt)",
                    loaded, result, reason: reason, status: .paused, at: now), on: connection)
            }
        } else {
            let reason = "dunning exhausted after \(charge.attempt) attempt(s) for cycle \(charge.cycle): \(result.declineCode ?? result.providerStatus)"
            if try await !connection.query(SubscriptionSQL.shared.markPastDue, [.int(charge.subscriptionID), .text(reason)]).rows.isEmpty {
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.past_due", webhookID: "subscription.past_due:\(charge.subscriptionID):c\(charge.cycle)",
                    loaded, result, reason: reason, at: now), on: connection)
            }
        }
        return true
    }

    private func recordHardDecline(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let queue = self.queue
        let now = self.now()
        let recorded = try await pool.transaction { connection in
            guard try await !connection.query(SubscriptionSQL.shared.recordSettled, [
                .int(charge.id), .text(Charge.Status.declinedHard.rawValue), result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus), result.declineCode.map(PostgresValue.text) ?? .null,
            ]).rows.isEmpty else { return false }
            let reason = "hard decline of cycle \(charge.cycle) attempt \(charge.attempt): \(result.declineCode ?? result.providerStatus)"
            if try await !connection.query(SubscriptionSQL.shared.markPastDue, [.int(charge.subscriptionID), .text(reason)]).rows.isEmpty {
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.charge_failed",
                    webhookID: "subscription.charge_failed:\(charge.subscriptionID):c\(charge.cycle):a\(charge.attempt)",
                    loaded, result, reason: reason, at: now), on: connection)
            }
            return true
        }
        if recorded { count(loaded.provider, .declinedHard) }
        return .succeeded
    }

    static func callback(_ type: String, webhookID: String, _ loaded: Loaded, _ result: ChargeResult, reason: String,
                         status: Subscription.Status = .pastDue, at date: Date) -> MerchantCallback {
        let charge = loaded.charge
        return MerchantCallback(
            webhookID: webhookID, type: type,
            data: .object([
                .init("subscription_id", .int(charge.subscriptionID)), .init("reference", .string(loaded.subscriptionReference)),
                .init("status", .string(status.rawValue)), .init("reason", .string(reason)),
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

    /// The success to settle for `loaded`, paid by the provider's `providerPaymentID`.
    static func success(_ loaded: Loaded, providerPaymentID: String, providerStatus: String) -> Success {
        let asOrder = loaded.provider == ProviderID.mercadopago.rawValue
        return Success(chargeID: loaded.charge.id, provider: loaded.provider, providerPaymentID: providerPaymentID,
                       merchantReference: asOrder ? nil : reference(loaded), providerStatus: providerStatus,
                       status: paymentStatus(providerStatus).rawValue, asOrder: asOrder)
    }

    /// A success to settle: the charge and the payment (Adyen, PXP) or order (Mercado Pago) it made.
    package struct Success: Sendable {
        let chargeID: Int64
        let provider: String
        let providerPaymentID: String
        let merchantReference: String?
        let providerStatus: String
        /// The canonical status of the payment or order row.
        let status: String
        let asOrder: Bool

        /// The processor's advisory-lock key of the row the webhook will update.
        var lockKey: AdvisoryLockKey {
            asOrder ? .order(provider: provider, id: providerPaymentID) : .payment(provider: provider, id: providerPaymentID)
        }
    }

    /// Marks the first attempts of `keys` in one statement. One element per key: the loaded
    /// charge when it was marked, nil when that key takes the one-by-one path (not a plain first
    /// attempt, or the statement failed: the one-by-one path then reports the failure).
    static func beginFirstAttempts(_ keys: [String], at now: Date, pool: PostgresPool) async -> [Loaded?] {
        var keyArray = PostgresArray(.text, capacity: keys.count * 40)
        var byKey: [String: Loaded] = [:]
        do {
            for key in keys { try keyArray.append(key) }
            for row in try await pool.query(SubscriptionSQL.shared.beginFirstAttempts, [.array(keyArray), .timestamptz(now)]).rows {
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
        try await pool.transaction { connection in try await settle(batch, on: connection) }
    }

    /// `settle(_:pool:)` on `connection`, inside the caller's transaction.
    static func settle(_ batch: [Success], on connection: PostgresConnection) async throws -> Set<Int64> {
        func rows(_ successes: [Success]) -> String {
            JSONOutput.array(successes.map { success in
                var fields: [JSONOutput.Member] = [
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
        try await AdvisoryLockKey.lock(batch.map(\.lockKey), on: connection)
        var settled = Set<Int64>()
        if !payments.isEmpty {
            for row in try await connection.query(SubscriptionSQL.shared.settleSuccessesWithPayments, [.jsonb(rows(payments))]).rows {
                settled.insert(try row.decode("id"))
            }
        }
        if !orders.isEmpty {
            for row in try await connection.query(SubscriptionSQL.shared.settleSuccessesWithOrders, [.jsonb(rows(orders))]).rows {
                settled.insert(try row.decode("id"))
            }
        }
        return settled
    }

    private func count(_ provider: String, _ outcome: String) {
        metrics?.increment(Self.metricName, [("provider", provider), ("outcome", outcome)])
    }

    /// Counts an attempt that ended in `status` (the outcome label is the stored status).
    private func count(_ provider: String, _ status: Charge.Status) { count(provider, status.rawValue) }
}
