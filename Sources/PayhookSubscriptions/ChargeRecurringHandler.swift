import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
package import PayhookQueue
import PayhookAdmin
import PayhookCallbacks

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
    let firstAttempts: BatchCombiner<String, Loaded?>
    /// Successes of concurrent jobs, settled in one transaction.
    let successes: BatchCombiner<Success, Bool?>

    /// Most charges one batched statement takes.
    static let maxBatch = 64
    /// Batched statements of each kind running at once (each holds a pooled connection), and
    /// the charges it takes to start one beside a running one. Measured with bench/charges
    /// (30,000 charges, 256 in flight): one flush at a time made every charge wait for the
    /// commit before its own; four started for any single charge made batches so small that
    /// PostgreSQL spent more CPU per charge than with two; four, each started only for 8 waiting
    /// charges, gave the most charges per second at the least CPU (bench/README.md,
    /// "bench/charges", has the figures).
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
        /// Frozen at the first call (`markAttempted`); nil before it, or when no cycle succeeded yet.
        let previousTransactionReference: String?
        /// The subscription's schedule, for the cycle's billing data (`SubscriptionSQL.chargeContextColumns`).
        let schedule: Schedule
        /// The vault token the charge is sent with.
        let token: Token

        /// When the subscription's cycles fall due, as `ChargeContext.billing` reports them.
        struct Schedule: Sendable {
            /// Nil when the stored interval does not parse (a row written by hand).
            let interval: SubscriptionInterval?
            let startAt: Date
            let maxCycles: Int?

            init(row: PostgresRow) throws(PostgresError) {
                interval = SubscriptionInterval.parse(json: try row.decode("subscription_interval"))
                startAt = try row.decode("subscription_start_at")
                maxCycles = try row.decode("subscription_max_cycles")
            }
        }

        /// The subscription's row of `vault_tokens`, as far as a charge request needs it.
        struct Token: Sendable {
            let provider: String
            /// The provider's id of the stored credential (`vault_tokens.token`).
            let value: String
            let shopperReference: String?
            let customerID: String?
            let status: String
            /// The token's first successful payment (Mercado Pago's `previous_transaction_reference`).
            let firstPaymentReference: String?
            /// Which kind of id the token is (`vault_tokens.token_kind`), nil where the provider has one.
            let kind: VaultTokenKind?
            /// The payment profile a Mercado Pago card id charged through, once an order showed it.
            let paymentProfileID: String?

            /// What the provider's charge call accepts as the stored credential: a Mercado Pago
            /// card id only through its payment profile; nil when there is nothing it accepts.
            var chargeable: String? {
                switch kind {
                case .cardID?: paymentProfileID
                case .paymentProfile?, nil: value
                }
            }

            init(row: PostgresRow) throws(PostgresError) {
                provider = try row.decode("token_provider")
                value = try row.decode("token")
                shopperReference = try row.decode("shopper_reference")
                customerID = try row.decode("customer_id")
                status = try row.decode("token_status")
                firstPaymentReference = try row.decode("token_first_payment_reference")
                kind = (try row.decode("token_kind", as: String?.self)).flatMap(VaultTokenKind.init(rawValue:))
                paymentProfileID = try row.decode("token_payment_profile_id")
            }
        }

        var provider: String { charge.provider ?? token.provider }

        init(row: PostgresRow) throws(PostgresError) {
            charge = try Charge(row: row)
            subscriptionStatus = try row.decode("subscription_status")
            subscriptionReference = try row.decode("subscription_reference")
            previousTransactionReference = try row.decode("previous_transaction_reference")
            schedule = try Schedule(row: row)
            token = try Token(row: row)
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
        if loaded.token.chargeable == nil {
            return .skip("skipped: the token is a Mercado Pago card id with no payment profile; merchant-initiated charges "
                + "send automatic_payments.payment_profile_id, and a card id there is refused. Register the customer's "
                + "payment profile and move the subscription to it")
        }
        return loaded.token.status == VaultTokenStatus.active.rawValue ? nil : .wait
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

    func count(_ provider: String, _ outcome: String) {
        metrics?.increment(Self.metricName, [("provider", provider), ("outcome", outcome)])
    }

    /// Counts an attempt that ended in `status` (the outcome label is the stored status).
    func count(_ provider: String, _ status: Charge.Status) { count(provider, status.rawValue) }
}
