package import Foundation
package import PayhookCore
package import PayhookLedger
package import PayhookPostgres
package import PayhookProviders
import PayhookQueue
import Synchronization

/// How a processor runs; fixed at start.
package struct ProcessorSettings: Sendable, Equatable {
    package init() {}

    /// Rows claimed per transaction.
    package var batchSize: Int = 100
    /// Concurrent claim loops in this process (each holds one pooled connection while busy).
    package var workers: Int = 2
    /// Whether each claim loop gets a thread of its own.
    package var threads: ProcessorThreads = .dedicated
    /// How often to look for due rows without a notification: retries become due silently,
    /// and a NOTIFY can be lost while the listener reconnects.
    var pollInterval: Duration = .seconds(1)
    /// Provider fetches in flight per batch.
    var maxConcurrentFetches: Int = 16
    /// How long events that need a provider fetch stay claimed while it runs outside any
    /// transaction (docs/decisions/0011). After a crash they are due again at its end; a fetch
    /// that outlasts it loses the events to another processor, which fetches them again.
    var fetchLease: Duration = .seconds(30)
    /// When a failed event is tried again. Equal jitter (half fixed, half random): after an
    /// outage every processor fails the same events at once, and this spreads their retries
    /// while keeping a floor, so no retry comes back immediately.
    package var retry = RetryPolicy(base: .seconds(1), maximum: .seconds(600), jitter: 0.5)
    /// How long a claim loop pauses after a batch failed as a whole (the database unreachable):
    /// doubling with each consecutive failure, across wakes, and back to the base once a batch
    /// succeeds, so an outage costs a few attempts rather than one per wake. No jitter: the
    /// pause only paces this process's own retries.
    var batchFailureBackoff = RetryPolicy(base: .milliseconds(50), maximum: .seconds(2), jitter: 0)
    /// Attempts after which the event is dead (`PAYHOOK_MAX_ATTEMPTS`).
    package var maxAttempts = 8

    /// Whether an event whose `attempt`-th attempt just failed has no attempts left.
    func isExhausted(afterAttempt attempt: Int) -> Bool { attempt >= maxAttempts }

    /// When the next attempt is due, from the clock's `now`.
    /// - Parameter jitter: a value in `0...1`; 0 waits half the backoff, 1 all of it.
    func nextAttempt(after attempt: Int, now: Date, jitter: Double) -> Date {
        now.addingTimeInterval(retry.delay(afterAttempt: attempt, unitRandom: jitter).seconds)
    }
}

/// What one batch did; for tests, metrics and the drain loop.
package struct BatchOutcome: Sendable, Equatable {
    var claimed = 0
    var processed = 0
    var retried = 0
    var dead = 0
    /// Payments newly reported to merchants as `order.overpaid` (a second payment on an order
    /// already reported paid).
    var overpayments = 0
}

/// Claims due `inbound_events` and normalizes them into the canonical tables.
///
/// Each batch is one transaction: claim up to ``ProcessorSettings/batchSize`` due pending rows
/// with `FOR UPDATE SKIP LOCKED` (so any number of processors, in any number of processes,
/// take disjoint rows), decode them (events that need provider state are leased instead, and
/// fetched and applied after the commit in a second transaction, so no transaction stays open
/// across a provider call: docs/decisions/0011), lock every payment / order /
/// token key the batch touches with transaction-scoped advisory locks in one sorted order
/// (two processors with events of the same payment serialize and never deadlock), then apply
/// each event inside its own SAVEPOINT so one failing event rolls back alone. Failed events
/// get `attempts + 1` and a backoff (``RetryPolicy``), or become `dead` with a `dead_letters`
/// row (see ``ProcessingFailure`` for what is retried). A failure of the batch itself
/// (connection lost, commit failed) changes nothing; its rows are counted as failed attempts
/// in a separate transaction when the database allows, otherwise they are simply claimed again.
///
/// Wake-ups: LISTEN `payhook_inbound_events` (the insert trigger notifies once per statement),
/// a poll every ``ProcessorSettings/pollInterval``, and the listener's `""` (re)connect signal.
/// A worker drains while batches come back full.
///
/// Threading: `run` owns its tasks; each worker runs on a ``DedicatedThreadExecutor`` of its
/// own, where its libpq calls block that thread instead of hopping to a connection queue and
/// back (unless ``ProcessorSettings/threads`` is `.shared`). `stop` may be called from
/// anywhere and lets the current batches finish (their transactions commit) before `run`
/// returns.
package final class InboundEventProcessor: Sendable {
    static let channel = "payhook_inbound_events"

    let pool: PostgresPool
    let conninfo: String?
    let interpreter: InboundEventInterpreter
    let applier: CanonicalEventApplier
    let hooks: ProcessingHooks
    let settings: ProcessorSettings
    let logger: Logger
    let now: @Sendable () -> Date
    let jitter: @Sendable () -> Double
    let metrics: ProcessingMetrics?
    let control = Mutex(Control())

    struct Control {
        var stopped = false
        var wakers: [AsyncStream<Void>.Continuation] = []
    }

    /// - Parameters:
    ///   - conninfo: for the LISTEN session (the pool serves everything else); `nil` when no
    ///     session can listen (behind a transaction-mode pooler): then workers only poll.
    ///   - hooks: what other features do in the processing transaction (``ProcessingHooks``):
    ///     fulfillment's follow-ups and merchant callbacks, subscriptions' reactions.
    ///   - now: the clock for claiming due rows and computing `next_attempt_at`.
    ///   - jitter: a random value in `0..<1` per retry.
    package init(pool: PostgresPool, conninfo: String?, clients: PaymentProviderClients, hooks: ProcessingHooks,
         settings: ProcessorSettings, logger: Logger, metrics: MetricsRegistry? = nil,
         now: @escaping @Sendable () -> Date = { Date() },
         jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.metrics = metrics.map(ProcessingMetrics.init)
        self.pool = pool
        self.conninfo = conninfo
        self.interpreter = InboundEventInterpreter(clients: clients)
        self.applier = CanonicalEventApplier(logger: logger, hooks: hooks)
        self.hooks = hooks
        self.settings = settings
        self.logger = logger
        self.now = now
        self.jitter = jitter
    }
}

/// Processing counters for `/metrics`, as handles so a batch never hashes labels.
package struct ProcessingMetrics: Sendable {
    let processed: MetricsRegistry.Counter
    let retried: MetricsRegistry.Counter
    let dead: MetricsRegistry.Counter
    let batchFailures: MetricsRegistry.Counter
    let batchDuration: MetricsRegistry.Histogram
    let overpayments: MetricsRegistry.Counter

    init(registry: MetricsRegistry) {
        registry.describe("payhook_processing_events_total", type: "counter",
                          help: "Inbound events handled by processors, by outcome (processed, retried, dead).")
        registry.describe("payhook_processing_batch_failures_total", type: "counter",
                          help: "Processing batches that failed as a whole (their events were charged an attempt).")
        registry.describe("payhook_processing_batch_duration_seconds", type: "histogram",
                          help: "Time to claim, interpret and commit one batch.")
        processed = registry.counter("payhook_processing_events_total", [("outcome", "processed")])
        retried = registry.counter("payhook_processing_events_total", [("outcome", "retried")])
        dead = registry.counter("payhook_processing_events_total", [("outcome", "dead")])
        batchFailures = registry.counter("payhook_processing_batch_failures_total")
        batchDuration = registry.histogram("payhook_processing_batch_duration_seconds")
        registry.describe("payhook_overpayments_total", type: "counter",
                          help: "Payments captured on an order already reported paid, reported as order.overpaid.")
        overpayments = registry.counter("payhook_overpayments_total")
    }

    func record(_ outcome: BatchOutcome, duration: Duration) {
        processed.increment(by: UInt64(max(0, outcome.processed)))
        retried.increment(by: UInt64(max(0, outcome.retried)))
        dead.increment(by: UInt64(max(0, outcome.dead)))
        overpayments.increment(by: UInt64(max(0, outcome.overpayments)))
        if outcome.claimed > 0 { batchDuration.observe(duration) }
    }
}

extension InboundEventProcessor: Service {
    package var serviceName: String { "processor" }
}
