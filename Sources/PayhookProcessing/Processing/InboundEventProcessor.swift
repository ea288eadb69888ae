package import Foundation
package import PayhookCore
package import PayhookPostgres
package import PayhookProviders
package import PayhookQueue
import PayhookOperations
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

    private let pool: PostgresPool
    private let conninfo: String?
    private let interpreter: InboundEventInterpreter
    private let applier: CanonicalEventApplier
    /// Queues fulfillment and merchant callbacks in the batch's transaction.
    private let followUps: FulfillmentTrigger
    private let hooks: ProcessingHooks
    private let settings: ProcessorSettings
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let jitter: @Sendable () -> Double
    private let metrics: ProcessingMetrics?
    private let control = Mutex(Control())

    private struct Control {
        var stopped = false
        var wakers: [AsyncStream<Void>.Continuation] = []
    }

    /// - Parameters:
    ///   - conninfo: for the LISTEN session (the pool serves everything else); `nil` when no
    ///     session can listen (behind a transaction-mode pooler): then workers only poll.
    ///   - hooks: what other features do in the processing transaction (``ProcessingHooks``).
    ///   - now: the clock for claiming due rows and computing `next_attempt_at`.
    ///   - jitter: a random value in `0..<1` per retry.
    package init(pool: PostgresPool, conninfo: String?, clients: PaymentProviderClients, hooks: ProcessingHooks,
         settings: ProcessorSettings, logger: Logger, metrics: MetricsRegistry? = nil, fulfillment: FulfillmentSettings = FulfillmentSettings(),
         now: @escaping @Sendable () -> Date = { Date() },
         jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.metrics = metrics.map(ProcessingMetrics.init)
        self.pool = pool
        self.conninfo = conninfo
        self.interpreter = InboundEventInterpreter(clients: clients)
        self.applier = CanonicalEventApplier(logger: logger, hooks: hooks)
        self.hooks = hooks
        self.followUps = FulfillmentTrigger(queue: JobQueue(pool: pool), settings: fulfillment)
        self.settings = settings
        self.logger = logger
        self.now = now
        self.jitter = jitter
    }

    // MARK: Loop

    /// Runs the workers until ``stop()``.
    package func run() async {
        let workerCount = max(1, settings.workers)
        var streams: [AsyncStream<Void>] = []
        let registered: Bool = control.withLock { control in
            guard !control.stopped else { return false }
            for _ in 0..<workerCount {
                let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                continuation.yield()  // look once at start: rows may be waiting already
                control.wakers.append(continuation)
                streams.append(stream)
            }
            return true
        }
        guard registered else { return }
        let listener = conninfo.map { PostgresListener.start(conninfo: $0, channels: [Self.channel]) }
        await withTaskGroup(of: Void.self) { group in
            if let listener {
                group.addTask {
                    for await _ in listener.notifications { self.wake() }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.settings.pollInterval)
                    self.wake()
                }
            }
            await withTaskGroup(of: Void.self) { workers in
                for (index, stream) in streams.enumerated() {
                    guard settings.threads == .dedicated else {
                        workers.addTask { await self.work(stream) }
                        continue
                    }
                    // Each claim loop on a thread of its own: it issues a few statements per
                    // event and blocks in libpq for each, as a single-threaded process would
                    // (DedicatedThreadExecutor says why; docs/decisions/0007).
                    let executor = DedicatedThreadExecutor(name: "processor-\(index)")
                    workers.addTask(executorPreference: executor) {
                        await self.work(stream)
                        executor.shutdown()
                    }
                }
            }
            listener?.stop()
            group.cancelAll()
        }
    }

    /// Stops taking new batches; batches in progress commit, then `run` returns.
    package func stop() {
        let wakers = control.withLock { control in
            control.stopped = true
            let wakers = control.wakers
            control.wakers = []
            return wakers
        }
        for waker in wakers { waker.finish() }
    }

    private var isStopped: Bool { control.withLock { $0.stopped } }

    private func wake() {
        let wakers = control.withLock { $0.wakers }
        for waker in wakers { waker.yield() }
    }

    private func work(_ wakes: AsyncStream<Void>) async {
        await Self.claimLoop(wakes: wakes, batchSize: settings.batchSize, backoff: settings.batchFailureBackoff,
                             isStopped: { self.isStopped },
                             batch: { try await self.processBatch() },
                             afterFailure: { error, pause in
            self.logger.error("inbound event batch failed", ["error": .string(String(describing: error))])
            try? await Task.sleep(for: pause)
        })
    }

    /// One worker's claim loop: on each wake, runs batches while they come back full.
    ///
    /// When a batch fails as a whole (the database is unreachable), `afterFailure` gets the error
    /// and how long to pause, rather than spin; the next wake or poll tries again. The pause grows
    /// by `backoff` with each consecutive failed batch, whichever wake ran it.
    /// Separate from the processor so that tests drive it with scripted batches and record the
    /// pauses instead of sleeping.
    static func claimLoop(wakes: AsyncStream<Void>, batchSize: Int, backoff: RetryPolicy, isStopped: () -> Bool,
                          batch: () async throws -> BatchOutcome,
                          afterFailure: (any Error, Duration) async -> Void) async {
        var consecutiveFailures = 0
        for await _ in wakes {
            while !isStopped() {
                do {
                    let outcome = try await batch()
                    consecutiveFailures = 0
                    if outcome.claimed < batchSize { break }
                } catch {
                    consecutiveFailures += 1
                    await afterFailure(error, backoff.delay(afterAttempt: consecutiveFailures, unitRandom: 1))
                    break
                }
            }
        }
    }

    // MARK: One batch

    /// Claims and processes one batch; returns what it did.
    /// - Throws: a `PostgresError` when the batch as a whole failed (its rows stay pending).
    @discardableResult
    func processBatch() async throws -> BatchOutcome {
        var claimedIDs: [ClaimedInboundEvent] = []
        var leased: FetchLease?
        let started = ContinuousClock.now
        do {
            var outcome = try await pool.withConnection { connection in
                try await connection.transaction { connection in
                    try await self.processBatch(on: connection, claimed: { claimedIDs = $0 }, leased: { leased = $0 })
                }
            }
            if let leased {
                // The claim is committed; from here a failure of the batch is the apply's.
                claimedIDs = []
                let applied = try await applyLeased(leased) { claimedIDs = $0 }
                outcome.processed += applied.processed
                outcome.retried += applied.retried
                outcome.dead += applied.dead
            }
            metrics?.record(outcome, duration: ContinuousClock.now - started)
            return outcome
        } catch {
            if !claimedIDs.isEmpty {
                await recordBatchFailure(claimedIDs, error: error)
            }
            metrics?.batchFailures.increment()
            throw error
        }
    }

    /// Events claimed for a provider fetch outside the transaction: `token` is the
    /// `next_attempt_at` the claim wrote, which the apply checks is still there.
    struct FetchLease: Sendable {
        let events: [ClaimedInboundEvent]
        let token: Date
    }

    /// Whether interpreting the event may call a provider API (thin or to-be-confirmed webhooks).
    private static func needsFetch(_ event: ClaimedInboundEvent) -> Bool {
        !(event.provider == .adyen || event.provider == nil)
    }

    /// Claims a batch; applies the events that need no fetch in this transaction, and leases
    /// the others (handed to `leased`) for ``applyLeased(_:claimed:)`` after the commit, so that
    /// no transaction stays open across a provider call.
    private func processBatch(on connection: PostgresConnection,
                              claimed report: ([ClaimedInboundEvent]) -> Void,
                              leased: (FetchLease) -> Void) async throws -> BatchOutcome {
        let claimNow = now()
        let rows = try await connection.query(ProcessingSQL.shared.claimDue, [.timestamptz(claimNow), .int(Int64(settings.batchSize))])
        var claimed: [ClaimedInboundEvent] = []
        claimed.reserveCapacity(rows.rows.count)
        for row in rows {
            let providerText: String = try row.decode("provider")
            claimed.append(ClaimedInboundEvent(
                id: try row.decode("id"), provider: ProviderID(rawValue: providerText), providerText: providerText,
                account: try row.decode("account"), body: try row.decode("body"), attempts: try row.decode("attempts"),
                receivedAt: try row.decode("received_at")))
        }
        report(claimed)
        let outcome = BatchOutcome(claimed: claimed.count)
        guard !claimed.isEmpty else { return outcome }

        let remote = claimed.filter(Self.needsFetch)
        if !remote.isEmpty {
            let token = claimNow.addingTimeInterval(settings.fetchLease.seconds)
            try await connection.query(ProcessingSQL.shared.leaseForFetch, [.integerArray(remote.map(\.id)), .timestamptz(token)])
            leased(FetchLease(events: remote, token: token))
        }
        let local = remote.isEmpty ? claimed : claimed.filter { !Self.needsFetch($0) }
        return try await apply(local, await interpretAll(local), outcome: outcome, on: connection)
    }

    /// Fetches the leased events' provider state with no transaction open, then applies them
    /// in one transaction, skipping any whose lease ran out and was taken by another processor.
    private func applyLeased(_ lease: FetchLease,
                             claimed report: ([ClaimedInboundEvent]) -> Void) async throws -> BatchOutcome {
        let plans = await interpretAll(lease.events)
        return try await pool.withConnection { connection in
            try await connection.transaction { connection in
                let rows = try await connection.query(ProcessingSQL.shared.reclaimLeased, [
                    .integerArray(lease.events.map(\.id)), .timestamptz(lease.token),
                ])
                let kept = Set(try rows.map { try $0.decode("id", as: Int64.self) })
                var events: [ClaimedInboundEvent] = []
                var keptPlans: [Result<[ApplicableEvent], ProcessingFailure>] = []
                for (event, plan) in zip(lease.events, plans) where kept.contains(event.id) {
                    events.append(event)
                    keptPlans.append(plan)
                }
                report(events)
                guard !events.isEmpty else { return BatchOutcome() }
                return try await self.apply(events, keptPlans, outcome: BatchOutcome(), on: connection)
            }
        }
    }

    /// Locks, applies and records the outcome of claimed events whose plans are known, in the
    /// caller's transaction.
    private func apply(_ claimed: [ClaimedInboundEvent], _ plans: [Result<[ApplicableEvent], ProcessingFailure>],
                       outcome: BatchOutcome, on connection: PostgresConnection) async throws -> BatchOutcome {
        var outcome = outcome
        guard !claimed.isEmpty else { return outcome }
        var keys: [AdvisoryLockKey] = []
        for plan in plans {
            if case .success(let events) = plan { keys += CanonicalEventApplier.lockKeys(for: events) }
        }
        if !keys.isEmpty {
            try await AdvisoryLockKey.lock(keys, on: connection)
        }

        let failedAt = now()
        if let applied = try await applyAllOrNothing(claimed, plans, on: connection) {
            outcome.processed = applied.processed.count
            for (event, plan) in zip(claimed, plans) {
                guard case .failure(let failure) = plan else { continue }
                if try await recordFailure(event, failure, at: failedAt, on: connection) { outcome.dead += 1 } else { outcome.retried += 1 }
            }
            outcome.overpayments = try await finish(applied.processed, applied.touched, on: connection)
            return outcome
        }

        var processed: [Int64] = []
        var touched = CanonicalEventApplier.TouchedRows()
        // Releasing one event's savepoint and opening the next one's share a round trip.
        var savepointOpen = false
        for (event, plan) in zip(claimed, plans) {
            switch plan {
            case .success(let events):
                if !savepointOpen {
                    try await connection.execute("SAVEPOINT inbound_event")
                    savepointOpen = true
                }
                do {
                    var pass = ApplyPass()
                    var rows = try await applier.apply(events, inboundEventID: event.id, account: event.account,
                                                       receivedAt: event.receivedAt, pass: &pass, on: connection)
                    try await pass.write(into: &rows, on: connection)
                    try await connection.execute("RELEASE SAVEPOINT inbound_event; SAVEPOINT inbound_event")
                    processed.append(event.id)
                    touched.merge(rows)
                } catch {
                    try await connection.execute("ROLLBACK TO SAVEPOINT inbound_event; RELEASE SAVEPOINT inbound_event")
                    savepointOpen = false
                    let failure = (error as? ProcessingFailure) ?? .database(error)
                    if try await recordFailure(event, failure, at: failedAt, on: connection) { outcome.dead += 1 } else { outcome.retried += 1 }
                }
            case .failure(let failure):
                if try await recordFailure(event, failure, at: failedAt, on: connection) { outcome.dead += 1 } else { outcome.retried += 1 }
            }
        }
        if savepointOpen { try await connection.execute("RELEASE SAVEPOINT inbound_event") }
        outcome.overpayments = try await finish(processed, touched, on: connection)
        outcome.processed = processed.count
        return outcome
    }

    /// The common case in one pass: every decodable event applied behind one savepoint for the
    /// batch instead of one per event, a round trip per event fewer (bench/normalize), with
    /// the batch's payments read in one statement and its payment and history rows written in
    /// three (``ApplyPass``). When any event fails, everything this pass wrote is rolled back to
    /// that savepoint (the rows claimed and the advisory locks, taken before it, stay held)
    /// and `nil` tells the caller to apply event by event, each behind its own savepoint, so
    /// that the failing one is rolled back alone, exactly as if this pass had not run.
    private func applyAllOrNothing(_ claimed: [ClaimedInboundEvent],
                                   _ plans: [Result<[ApplicableEvent], ProcessingFailure>],
                                   on connection: PostgresConnection) async throws
        -> (processed: [Int64], touched: CanonicalEventApplier.TouchedRows)?
    {
        guard plans.contains(where: { if case .success = $0 { true } else { false } }) else { return nil }
        try await connection.execute("SAVEPOINT inbound_batch")
        var processed: [Int64] = []
        var touched = CanonicalEventApplier.TouchedRows()
        var pass = ApplyPass()
        do {
            try await pass.readPayments(named: plans.flatMap { (try? $0.get()) ?? [] }, on: connection)
            for (event, plan) in zip(claimed, plans) {
                guard case .success(let events) = plan else { continue }
                touched.merge(try await applier.apply(events, inboundEventID: event.id, account: event.account,
                                                      receivedAt: event.receivedAt, pass: &pass, on: connection))
                processed.append(event.id)
            }
            try await pass.write(into: &touched, on: connection)
        } catch {
            try await connection.execute("ROLLBACK TO SAVEPOINT inbound_batch; RELEASE SAVEPOINT inbound_batch")
            return nil
        }
        try await connection.execute("RELEASE SAVEPOINT inbound_batch")
        return (processed, touched)
    }

    /// The batch's follow-ups (fulfillment, charge settlement) and marking its events processed.
    /// - Returns: the overpayments newly reported (``BatchOutcome/overpayments``).
    private func finish(_ processed: [Int64], _ touched: CanonicalEventApplier.TouchedRows,
                        on connection: PostgresConnection) async throws -> Int {
        guard !processed.isEmpty else { return 0 }
        let overpayments = try await followUps.afterProcessing(touched, on: connection)
        try await hooks.afterBatch(touched, connection)
        try await connection.query(ProcessingSQL.shared.markProcessed, [.integerArray(processed)])
        return overpayments
    }

    /// Decodes every claimed event and runs the provider fetches, a bounded number at once.
    private func interpretAll(_ claimed: [ClaimedInboundEvent]) async -> [Result<[ApplicableEvent], ProcessingFailure>] {
        // Adyen events need no fetch; decoding them inline avoids a task per event.
        var results = [Result<[ApplicableEvent], ProcessingFailure>?](repeating: nil, count: claimed.count)
        var remote: [Int] = []
        for (index, event) in claimed.enumerated() {
            if event.provider == .adyen || event.provider == nil {
                results[index] = await interpreter.interpret(event)
            } else {
                remote.append(index)
            }
        }
        if !remote.isEmpty {
            let interpreter = self.interpreter
            let limit = max(1, settings.maxConcurrentFetches)
            await withTaskGroup(of: (Int, Result<[ApplicableEvent], ProcessingFailure>).self) { group in
                var next = 0
                func add() {
                    let index = remote[next]
                    let event = claimed[index]
                    group.addTask { (index, await interpreter.interpret(event)) }
                    next += 1
                }
                while next < remote.count, next < limit { add() }
                for await (index, result) in group {
                    results[index] = result
                    if next < remote.count { add() }
                }
            }
        }
        return results.map { $0 ?? .failure(ProcessingFailure(retryable: true, reason: .maxAttemptsExceeded, message: "event was not interpreted")) }
    }

    /// Counts a failed attempt: a retry with backoff, or a dead event with its dead letter.
    /// - Returns: `true` when the event is now dead.
    private func recordFailure(_ event: ClaimedInboundEvent, _ failure: ProcessingFailure, at time: Date,
                               on connection: PostgresConnection) async throws -> Bool {
        let attempt = event.attempts + 1
        let fields: [String: LogValue] = [
            "inbound_event.id": .int(event.id), "provider": .string(event.providerText),
            "inbound_event.attempt": .init(attempt), "error": .string(failure.message),
        ]
        if failure.retryable, !settings.isExhausted(afterAttempt: attempt) {
            let due = settings.nextAttempt(after: attempt, now: time, jitter: jitter())
            try await connection.query(ProcessingSQL.shared.scheduleRetry, [
                .int(event.id), .int(Int64(attempt)), .timestamptz(due), .text(failure.message),
            ])
            logger.warning("inbound event failed; will retry", fields)
            return false
        }
        let reason = failure.reason
        try await connection.query(ProcessingSQL.shared.markDead, [.int(event.id), .int(Int64(attempt)), .text(failure.message)])
        try await DeadLetterStore.openForInboundEvent(id: event.id, provider: event.providerText, reason: reason,
                                                      error: failure.message, on: connection)
        logger.error("inbound event dead-lettered", fields.merging(["reason": .string(reason.rawValue)]) { $1 })
        return true
    }

    /// After a batch failed as a whole, counts an attempt against each claimed row in a fresh
    /// transaction, so that an event which breaks its batch every time still ends up dead.
    private func recordBatchFailure(_ claimed: [ClaimedInboundEvent], error: any Error) async {
        let failure = ProcessingFailure.database(error)
        let time = now()
        do {
            try await pool.transaction { connection in
                for event in claimed {
                    _ = try await self.recordFailure(event, failure, at: time, on: connection)
                }
            }
        } catch {
            logger.warning("could not record the failed batch; its events stay pending",
                           ["error": .string(String(describing: error))])
        }
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
