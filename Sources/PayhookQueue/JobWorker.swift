import Foundation
public import PayhookCore
import PayhookPostgres
import Synchronization

/// Why a worker cannot be built.
public struct JobWorkerConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
}

/// Claims due jobs and runs their handlers, at most `concurrency` at a time.
///
/// Why this shape: one claim loop per process fetches as many jobs as it has free slots with a
/// single `UPDATE … SKIP LOCKED` (so any number of workers share a table without coordination),
/// successes are recorded in batches by one completer, and leases are renewed in one statement
/// per heartbeat for everything in flight. The loop wakes on `NOTIFY` (through a dedicated
/// `PostgresListener` session), on a freed slot, and every `pollInterval` as a fallback for
/// missed notifications and for jobs whose `run_at` arrives.
///
/// Lifecycle: call `run()` once from a task that owns it. `shutdown(gracePeriod:)` is the
/// graceful stop: no new claims, in-flight handlers get until the deadline, then the rest are
/// cancelled and their jobs released back to `available` (their attempt given back), and `run()`
/// returns once every handler has returned. Cancelling the task that runs `run()` is the hard
/// stop: in-flight jobs are released at once. Either way no job is left `running` under this
/// worker unless the database was unreachable, in which case the lease expires and a rescuer
/// (every worker runs one unless configured not to) returns the job.
///
/// Each handler runs with its claim's ``JobLease`` as `JobLease.current`: a handler calling an
/// outside service wraps the call in ``JobLease/whileHeld(_:)``, so it never starts or stays in
/// a call once another worker may hold the job (a lost heartbeat, a release at stop).
///
/// Threading: all methods may be called from any task; state is under a `Mutex`.
public final class JobWorker: Sendable {
    /// Tunables; the defaults suit payhook's jobs (seconds-long HTTP calls).
    public struct Configuration: Sendable {
        /// Unique per worker instance; stored in `jobs.locked_by`.
        public var name: String
        /// Most jobs in flight at once.
        public var concurrency: Int
        /// How long a claim lasts without a heartbeat.
        public var lease: Duration
        /// How often leases of in-flight jobs are renewed; well below `lease`.
        public var heartbeatInterval: Duration
        /// Fallback wake-up when no notification arrives.
        public var pollInterval: Duration
        /// Conninfo for the LISTEN session; nil disables notifications (polling only).
        public var listenConninfo: String?
        /// How often this process runs the rescuer; nil disables it.
        public var rescueInterval: Duration?
        /// While the queue is busy (the last claim filled every free slot), the least time between
        /// claims unless half the slots are free. Why: each claim is a commit; claiming one job per
        /// freed slot would make the commit rate, not the database's row throughput, the limit.
        public var fetchCooldown: Duration
        /// What `stop()` (the `Service` face) gives in-flight jobs: see `shutdown(gracePeriod:)`.
        public var shutdownGracePeriod: Duration

        /// Creates a configuration.
        public init(name: String = JobWorker.defaultName(), concurrency: Int = 10, lease: Duration = .seconds(60),
                    heartbeatInterval: Duration? = nil, pollInterval: Duration = .seconds(1),
                    listenConninfo: String?, rescueInterval: Duration? = .seconds(30),
                    fetchCooldown: Duration = .milliseconds(20), shutdownGracePeriod: Duration = .seconds(20)) {
            self.name = name
            self.concurrency = max(1, concurrency)
            self.lease = lease
            self.heartbeatInterval = heartbeatInterval ?? lease / 3
            self.pollInterval = pollInterval
            self.listenConninfo = listenConninfo
            self.rescueInterval = rescueInterval
            self.fetchCooldown = fetchCooldown
            self.shutdownGracePeriod = shutdownGracePeriod
        }
    }

    /// Counters since start, for metrics and the benchmark.
    public struct Statistics: Sendable, Hashable {
        /// Claim statements run.
        public var claims = 0
        /// Jobs those statements returned.
        public var claimedJobs = 0
        /// Completion statements run (each completes a batch of successes).
        public var completionBatches = 0
        /// Jobs those statements completed.
        public var completedJobs = 0
    }

    private struct State {
        var statistics = Statistics()
        var started = false
        var stopDeadline: ContinuousClock.Instant?
        /// Claims held: from claim until the outcome is recorded (or the job released).
        var inFlight: [Int64: Job] = [:]
        /// The lease of each claim, as handlers see it (`JobLease.current`).
        var leases: [Int64: JobLease] = [:]
        /// Handlers executing; what `concurrency` bounds.
        var handlersRunning = 0
        /// Successes waiting for the completer; they hold a claim but no handler slot.
        var awaitingCompletion = 0
    }

    private let queue: JobQueue
    private let handlers: [String: AnyJobHandler]
    private let kinds: [String]
    let configuration: Configuration
    private let logger: Logger
    private let state = Mutex(State())
    private let doorbell: AsyncStream<Void>
    private let doorbellContinuation: AsyncStream<Void>.Continuation
    private let completer: CompletionBatcher

    /// Creates a worker; nothing runs until `run()`.
    /// - Throws: `JobWorkerConfigurationError` when two handlers claim the same kind or none is given.
    public init(queue: JobQueue, handlers: [AnyJobHandler], configuration: Configuration, logger: Logger) throws {
        var byKind = [String: AnyJobHandler]()
        for handler in handlers {
            guard byKind.updateValue(handler, forKey: handler.kind) == nil else {
                throw JobWorkerConfigurationError(description: "two handlers for job kind \(handler.kind)")
            }
        }
        guard !byKind.isEmpty else { throw JobWorkerConfigurationError(description: "a worker needs at least one handler") }
        self.queue = queue
        self.handlers = byKind
        self.kinds = byKind.keys.sorted()
        self.configuration = configuration
        self.logger = logger.with(["job.worker": .string(configuration.name)])
        (doorbell, doorbellContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        completer = CompletionBatcher(queue: queue, logger: self.logger)
    }

    /// `host:pid:random`, unique enough to tell workers apart in `locked_by` and logs.
    public static func defaultName() -> String {
        let host = ProcessInfo.processInfo.hostName
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "\(host):\(ProcessInfo.processInfo.processIdentifier):\(random)"
    }

    /// Counters since start.
    public var statistics: Statistics {
        var statistics = state.withLock { $0.statistics }
        let batches = completer.statistics
        statistics.completionBatches = batches.batches
        statistics.completedJobs = batches.jobs
        return statistics
    }

    /// The jobs this worker currently runs.
    public var inFlightCount: Int { state.withLock { $0.inFlight.count } }

    /// Runs until `shutdown(gracePeriod:)` has drained or the calling task is cancelled.
    /// Call once; later calls return at once.
    public func run() async {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let listener = configuration.listenConninfo.map {
            PostgresListener.start(conninfo: $0, channels: [queue.channel])
        }
        await withDiscardingTaskGroup { services in
            if let listener {
                services.addTask {
                    for await notification in listener.notifications
                    where notification.channel.isEmpty || self.handlers[notification.payload] != nil {
                        self.ring()
                    }
                }
            }
            services.addTask { await self.tick() }
            services.addTask { await self.heartbeat() }
            services.addTask { await self.completer.run() }
            if let interval = configuration.rescueInterval {
                services.addTask { await JobRescuer(queue: self.queue).run(every: interval, logger: self.logger) }
            }
            await claimLoop()
            listener?.stop()
            services.cancelAll()
        }
        doorbellContinuation.finish()
    }

    /// Starts the graceful stop: claim nothing more, give in-flight handlers until
    /// now + `gracePeriod`, then cancel them and release their jobs. Returns at once; `run()`
    /// returns when the stop is complete. Calling it again only keeps the earlier deadline.
    public func shutdown(gracePeriod: Duration) {
        let deadline = ContinuousClock.now + gracePeriod
        state.withLock { state in
            if state.stopDeadline == nil { state.stopDeadline = deadline }
        }
        ring()
    }

    private func ring() { doorbellContinuation.yield(()) }

    private var stopDeadline: ContinuousClock.Instant? { state.withLock { $0.stopDeadline } }

    /// Handler slots free for new claims. A success waiting to be recorded frees its slot at
    /// once, so claiming overlaps with completing; beyond `concurrency` such waiting successes
    /// (a slow or unreachable database) they count again, which bounds the claims held.
    private var freeSlots: Int {
        state.withLock { state in
            let used = state.handlersRunning + max(0, state.awaitingCompletion - configuration.concurrency)
            return configuration.concurrency - used
        }
    }

    // MARK: Claim loop

    private func claimLoop() async {
        var bell = doorbell.makeAsyncIterator()
        var consecutiveFailures = 0
        // Set while the queue is busy: the earliest next claim, unless half the slots free up.
        var cooldownUntil: ContinuousClock.Instant?
        let halfTheSlots = max(1, configuration.concurrency / 2)
        await withDiscardingTaskGroup { running in
            while !Task.isCancelled, stopDeadline == nil {
                let free = freeSlots
                if let until = cooldownUntil, free < halfTheSlots, ContinuousClock.now < until {
                    guard await bell.next() != nil else { break }
                    continue
                }
                if free > 0 {
                    do {
                        // Leases count from before the claim, so this process's view of one never
                        // ends after the database's.
                        let claimedAt = ContinuousClock.now
                        let jobs = try await queue.claim(limit: free, kinds: kinds, worker: configuration.name,
                                                         lease: configuration.lease)
                        consecutiveFailures = 0
                        // A stop that began while this claim was in flight: run nothing more;
                        // hand the jobs straight back (attempt returned) for another worker.
                        if stopDeadline != nil {
                            if !jobs.isEmpty {
                                _ = await persist("releasing jobs claimed during stop") { () throws(PostgresError) in
                                    try await self.queue.release(jobs)
                                }
                            }
                            break
                        }
                        let margin = configuration.lease / 6
                        state.withLock { state in
                            for job in jobs {
                                state.inFlight[job.id] = job
                                state.leases[job.id] = JobLease(expiresAt: claimedAt + configuration.lease, margin: margin)
                            }
                            state.handlersRunning += jobs.count
                            state.statistics.claims += 1
                            state.statistics.claimedJobs += jobs.count
                        }
                        for job in jobs { running.addTask { await self.execute(job) } }
                        // A full batch suggests more is due: claim again once enough slots free up
                        // or the cooldown passes (a timer rings then, in case no job finishes).
                        if jobs.count == free {
                            let until = ContinuousClock.now + configuration.fetchCooldown
                            cooldownUntil = until
                            running.addTask {
                                try? await Task.sleep(until: until, clock: .continuous)
                                self.ring()
                            }
                            continue
                        }
                        cooldownUntil = nil
                    } catch {
                        consecutiveFailures += 1
                        logger.error("claiming jobs failed", ["error": .string(String(describing: error))])
                        try? await Task.sleep(for: Self.claimFailureBackoff.delay(afterAttempt: consecutiveFailures, unitRandom: 1))
                        continue
                    }
                }
                guard await bell.next() != nil else { break }
            }
            await drain(&bell, running: &running)
        }
    }

    /// Waits for in-flight handlers until the deadline (none after a cancellation), then
    /// releases what is left and cancels those handlers.
    private func drain(_ bell: inout AsyncStream<Void>.Iterator, running: inout DiscardingTaskGroup) async {
        let deadline = Task.isCancelled ? ContinuousClock.now : (stopDeadline ?? .now)
        running.addTask {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.ring()
        }
        while inFlightCount > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            guard await bell.next() != nil else { break }
        }
        let (unfinished, leases) = state.withLock { state in
            let jobs = Array(state.inFlight.values)
            let leases = Array(state.leases.values)
            state.inFlight = [:]
            state.leases = [:]
            return (jobs, leases)
        }
        // Before the jobs go back: a handler must not be mid-call when another worker starts.
        for lease in leases { lease.lose() }
        if !unfinished.isEmpty {
            let released = await persist("releasing jobs") { () throws(PostgresError) in
                try await self.queue.release(unfinished)
            }
            logger.warning("released unfinished jobs at stop", [
                "jobs.unfinished": .init(unfinished.count), "jobs.released": .init(released?.count ?? 0),
            ])
        }
        running.cancelAll()
    }

    private func execute(_ job: Job) async {
        let outcome: JobOutcome
        if let handler = handlers[job.kind] {
            let lease = state.withLock { $0.leases[job.id] }
            do {
                outcome = try await JobLease.$current.withValue(lease) { try await handler.body(job) }
            } catch {
                outcome = .retry(error: String(describing: error))
            }
        } else {
            outcome = .retry(error: "no handler for job kind \(job.kind)")
        }
        let succeeded = outcome == .succeeded
        // Released at stop: the job is someone else's now; recording would be refused anyway.
        let stillOurs = state.withLock { state in
            state.handlersRunning -= 1
            let ours = state.inFlight[job.id] != nil
            if ours, succeeded { state.awaitingCompletion += 1 }
            return ours
        }
        if stillOurs {
            let held: Bool?
            if succeeded {
                ring()  // the handler slot is free while the success waits for its batch
                held = await completer.complete(job)
                state.withLock { $0.awaitingCompletion -= 1 }
            } else {
                held = await persist("recording a job outcome") { () throws(PostgresError) in
                    try await self.queue.record(outcome, for: job)
                }
            }
            if held == false {
                logger.warning("job result refused: the claim was lost (lease expired and the job was rescued)",
                               ["job.id": .int(job.id), "job.kind": .string(job.kind), "job.attempt": .init(job.attempt)])
            }
        }
        state.withLock { state in
            state.inFlight.removeValue(forKey: job.id)
            state.leases.removeValue(forKey: job.id)
        }
        ring()
    }

    // MARK: Services

    // Both run until the services' group is cancelled, which stops their loops.

    private func tick() async {
        await PeriodicLoop().run(every: configuration.pollInterval, first: .afterInterval) { ring() }
    }

    private func heartbeat() async {
        await PeriodicLoop().run(every: configuration.heartbeatInterval, first: .afterInterval) { await renewLeases() }
    }

    private func renewLeases() async {
        let jobs = state.withLock { Array($0.inFlight.values) }
        guard !jobs.isEmpty else { return }
        do {
            let renewedAt = ContinuousClock.now
            let held = try await queue.extendLeases(jobs, lease: configuration.lease)
            let leases = state.withLock { $0.leases }
            for job in jobs {
                if held.contains(job.id) {
                    leases[job.id]?.renew(until: renewedAt + configuration.lease)
                } else {
                    // Another worker may run it now: stop this handler's provider calls.
                    leases[job.id]?.lose()
                    logger.warning("lease lost while running", ["job.id": .int(job.id), "job.kind": .string(job.kind)])
                }
            }
        } catch {
            logger.error("extending leases failed", ["error": .string(String(describing: error))])
        }
    }

    /// Runs a recording statement, retrying a few times; nil when it kept failing (the lease
    /// then expires and the rescuer returns the job: at-least-once).
    private func persist<T: Sendable>(_ what: String, _ body: () async throws(PostgresError) -> T) async -> T? {
        await Self.persist(what, logger: logger, body)
    }

    static func persist<T: Sendable>(_ what: String, logger: Logger,
                                     _ body: () async throws(PostgresError) -> T) async -> T? {
        let tries = recordingTries
        for attempt in 1...tries {
            do {
                return try await body()
            } catch {
                logger.error("\(what) failed", ["error": .string(error.description), "try": .init(attempt)])
                if attempt < tries { try? await Task.sleep(for: recordingBackoff.delay(afterAttempt: attempt, unitRandom: 1)) }
            }
        }
        return nil
    }

    // MARK: Backoff of the worker's own database calls

    /// The pause after the `n`th claim in a row failed (the database unreachable): 100 ms doubling
    /// to 5 s, so a worker neither spins against a dead server nor waits long after it returns.
    /// No jitter: one claim loop per process, and the pool's connects already spread out.
    package static let claimFailureBackoff = RetryPolicy(base: .milliseconds(100), maximum: .seconds(5), jitter: 0)

    /// How many times `persist` runs a recording statement (an outcome, a release) before it gives
    /// up. An outcome that is not recorded leaves its job `running` until the lease expires and the
    /// rescuer returns it, so it tries for a while first.
    package static let recordingTries = 6

    /// The pause after the `n`th failed try of a recording statement: 100 ms doubling, five
    /// pauses (100 ms to 1.6 s, 3.1 s in all) between the `recordingTries` tries. No jitter.
    package static let recordingBackoff = RetryPolicy(base: .milliseconds(100), maximum: .milliseconds(1600), jitter: 0)
}
