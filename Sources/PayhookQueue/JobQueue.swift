public import Foundation
public import PayhookCore
public import PayhookPostgres

/// The job store: enqueue, claim, heartbeat and finish jobs in the `jobs` table.
///
/// Why PostgreSQL: a job is enqueued in the same transaction as the change that needs it, so
/// there is never a committed order without its job or a job without its order; `FOR UPDATE
/// SKIP LOCKED` lets any number of processes claim without coordination (DESIGN invariant 8).
///
/// Delivery is at least once: a worker that dies after a job's effect but before `complete` has
/// its job rescued and run again, so handlers must be idempotent (invariant 4 is upheld by
/// business keys, e.g. `unique_key` and idempotency keys, not by the queue alone).
///
/// Finishing calls (`complete`, `fail`, `snooze`, `discard`, `release`, `extendLeases`) change a
/// row only while the caller still holds the claim (same worker, same attempt, still `running`)
/// and report whether they did; see `JobSQL`.
///
/// Threading: a `Sendable` value; every method may be called from any task. Statements run on
/// connections from `pool` (or on the connection the caller passes).
public struct JobQueue: Sendable {
    /// The channel `enqueue` notifies and workers listen to.
    public static let defaultChannel = "payhook_jobs"

    /// Where jobs live.
    public let pool: PostgresPool
    /// The NOTIFY channel.
    public let channel: String
    /// Backoff after a failed attempt.
    public let retryPolicy: RetryPolicy
    /// `max_attempts` for jobs enqueued without one.
    public let defaultMaxAttempts: Int
    /// Where a discarded job's dead letter goes, in the statement that discards it.
    public let deadLetters: JobDeadLetterSink
    /// The statements that discard, composed with `deadLetters` once.
    let finishing: JobFinishingSQL
    private let unitRandom: @Sendable () -> Double

    /// Creates a store over `pool`; nothing is contacted until a method is called.
    ///
    /// Features build theirs with `PayhookOperations`' `JobQueue(pool:…)`, which passes the
    /// dead-letter store's sink; the queue's own tests pass one of their own.
    /// - Parameters:
    ///   - deadLetters: records the letter of every job this queue (or its rescuer) discards.
    ///   - unitRandom: source of jitter in 0…1; injected so tests can pin the backoff.
    public init(pool: PostgresPool, deadLetters: JobDeadLetterSink, channel: String = JobQueue.defaultChannel,
                retryPolicy: RetryPolicy = .standard, defaultMaxAttempts: Int = 25,
                unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.pool = pool
        self.channel = channel
        self.retryPolicy = retryPolicy
        self.defaultMaxAttempts = defaultMaxAttempts
        self.deadLetters = deadLetters
        finishing = JobFinishingSQL(deadLetters: deadLetters)
        self.unitRandom = unitRandom
    }

    // MARK: Enqueue

    /// Inserts a job on `connection`, inside whatever transaction the caller has open there.
    ///
    /// Why on the caller's connection: the job commits or rolls back with the caller's own
    /// changes. Workers are notified on commit only.
    ///
    /// ```swift
    /// try await pool.transaction { connection in
    ///     try await orders.markPaid(order, on: connection)
    ///     try await queue.enqueue(FulfillOrderArgs(orderID: 42), uniqueKey: "fulfill_order:42", on: connection)
    /// }
    /// ```
    /// - Parameters:
    ///   - payload: JSON text; stored as `jsonb`. Keep secrets out of it.
    ///   - uniqueKey: when a job with this key already exists (in any state), nothing is inserted.
    ///   - runAt: not before this time; now when nil.
    ///   - maxAttempts: attempts before the job is discarded; `defaultMaxAttempts` when nil.
    /// - Returns: the new job's id, or nil when `uniqueKey` already existed.
    /// - Throws: `PostgresError`, e.g. `.checkViolation` for `maxAttempts < 1`, `.other` for
    ///   payload that is not JSON. In a transaction, a failed statement aborts the transaction.
    @discardableResult
    public func enqueue(kind: String, payload: String = "{}", uniqueKey: String? = nil, runAt: Date? = nil,
                        maxAttempts: Int? = nil, on connection: PostgresConnection) async throws(PostgresError) -> Int64? {
        let rows = try await connection.query(JobSQL.shared.enqueue, enqueueBinds(kind, payload, uniqueKey, runAt, maxAttempts))
        return try rows.rows.first?.decode("id", as: Int64.self)
    }

    /// Inserts a job in a transaction of its own; see `enqueue(kind:payload:uniqueKey:runAt:maxAttempts:on:)`.
    @discardableResult
    public func enqueue(kind: String, payload: String = "{}", uniqueKey: String? = nil, runAt: Date? = nil,
                        maxAttempts: Int? = nil) async throws(PostgresError) -> Int64? {
        let rows = try await pool.query(JobSQL.shared.enqueue, enqueueBinds(kind, payload, uniqueKey, runAt, maxAttempts))
        return try rows.rows.first?.decode("id", as: Int64.self)
    }

    /// Inserts a job for typed arguments on `connection`, inside the caller's transaction; see
    /// `enqueue(kind:payload:uniqueKey:runAt:maxAttempts:on:)`.
    @discardableResult
    package func enqueue<Args: JobArgs>(_ args: Args, uniqueKey: String? = nil, runAt: Date? = nil, maxAttempts: Int? = nil,
                                        on connection: PostgresConnection) async throws(PostgresError) -> Int64? {
        try await enqueue(kind: Args.kind, payload: args.payload.rendered, uniqueKey: uniqueKey, runAt: runAt,
                          maxAttempts: maxAttempts, on: connection)
    }

    /// Inserts a job for typed arguments in a transaction of its own.
    @discardableResult
    package func enqueue<Args: JobArgs>(_ args: Args, uniqueKey: String? = nil, runAt: Date? = nil,
                                        maxAttempts: Int? = nil) async throws(PostgresError) -> Int64? {
        try await enqueue(kind: Args.kind, payload: args.payload.rendered, uniqueKey: uniqueKey, runAt: runAt,
                          maxAttempts: maxAttempts)
    }

    /// Inserts many jobs with one statement on `connection`, inside the caller's transaction;
    /// for producers of many jobs at once (a scheduler's due charges). Same rules as the
    /// single-job `enqueue`; a request whose `uniqueKey` exists already, or repeats an earlier
    /// request's key in the same batch, is skipped.
    /// - Returns: the ids inserted, in no particular order (skipped requests have none).
    /// - Throws: `PostgresError`; an invalid payload fails the whole statement.
    @discardableResult
    public func enqueue(_ requests: [JobRequest], on connection: PostgresConnection) async throws(PostgresError) -> [Int64] {
        guard !requests.isEmpty else { return [] }
        let rows = try await connection.query(JobSQL.shared.enqueueMany, [
            .jsonb(JobRequest.jsonArray(requests)), .int(Int64(defaultMaxAttempts)), .text(channel),
        ])
        return try rows.rows.map { row throws(PostgresError) in try row.decode("id", as: Int64.self) }
    }

    private func enqueueBinds(_ kind: String, _ payload: String, _ uniqueKey: String?, _ runAt: Date?,
                              _ maxAttempts: Int?) -> [PostgresValue] {
        [.text(kind), .jsonb(payload), uniqueKey.map(PostgresValue.text) ?? .null,
         runAt.map(PostgresValue.timestamptz) ?? .null, .int(Int64(maxAttempts ?? defaultMaxAttempts)), .text(channel)]
    }

    // MARK: Claim and heartbeat

    /// Claims up to `limit` due jobs of the given kinds, oldest `run_at` first.
    ///
    /// Each claimed job becomes `running`, its attempt is counted, and it is leased to `worker`
    /// until now + `lease` (database clock). Rows other claimers hold are skipped, not waited for.
    /// - Parameters:
    ///   - kinds: only these kinds (a worker claims what it has handlers for).
    ///   - worker: a name unique to this worker instance, e.g. `host:pid:random`.
    /// - Throws: `PostgresError`.
    public func claim(limit: Int, kinds: [String], worker: String, lease: Duration) async throws(PostgresError) -> [Job] {
        guard limit > 0, !kinds.isEmpty else { return [] }
        let rows = try await pool.query(JobSQL.shared.claimDue, [
            .int(Int64(limit)), .text(worker), .double(lease.seconds), .jsonb(JSONString.array(kinds)),
        ])
        var jobs = [Job]()
        jobs.reserveCapacity(rows.rows.count)
        for row in rows.rows { jobs.append(try Job(row: row, worker: worker)) }
        // UPDATE … RETURNING does not keep the subquery's order.
        return jobs.sorted { ($0.runAt, $0.id) < ($1.runAt, $1.id) }
    }

    /// Pushes the leases of `jobs` to now + `lease`, for jobs that outlive their lease.
    /// - Returns: the ids whose claim is still held; a missing id means the lease was lost (the
    ///   job was rescued, and possibly claimed by another worker): its result will be refused.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func extendLeases(_ jobs: [Job], lease: Duration) async throws(PostgresError) -> Set<Int64> {
        try await perWorker(jobs) { worker, held throws(PostgresError) in
            try await pool.query(JobSQL.shared.extendHeldLeases, Self.heldBinds(held, worker) + [.double(lease.seconds)])
        }
    }

    // MARK: Finish

    /// Marks `jobs` succeeded.
    /// - Returns: the ids this call finished; others were no longer held by their claim.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func complete(_ jobs: [Job]) async throws(PostgresError) -> Set<Int64> {
        try await perWorker(jobs) { worker, held throws(PostgresError) in
            try await pool.query(JobSQL.shared.completeHeld, Self.heldBinds(held, worker))
        }
    }

    /// Marks one job succeeded. - Returns: false when the claim was no longer held.
    @discardableResult
    public func complete(_ job: Job) async throws(PostgresError) -> Bool {
        try await complete([job]).contains(job.id)
    }

    /// Records a failed attempt: the error is appended to `errors`, and the job becomes
    /// `retryable` after the policy's backoff, or, after its last attempt, `discarded` with a
    /// dead letter (`max_attempts_exceeded`, through `deadLetters`) in the same statement.
    /// - Parameter error: text for operators; must not contain secrets. NUL characters are
    ///   replaced and the text is cut at 4,000 characters.
    /// - Returns: the job's new state, or nil when the claim was no longer held.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func fail(_ job: Job, error: String) async throws(PostgresError) -> JobState? {
        let delay = retryPolicy.delay(afterAttempt: job.attempt, unitRandom: unitRandom())
        let rows = try await pool.query(finishing.failHeld, Self.oneHeldBinds(job) + [
            .double(delay.seconds), .text(Self.errorText(error)),
        ])
        guard let row = rows.rows.first else { return nil }
        return JobState(rawValue: try row.decode("state", as: String.self))
    }

    /// Puts the job back to run after `delay` without counting this attempt.
    /// - Returns: false when the claim was no longer held.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func snooze(_ job: Job, for delay: Duration) async throws(PostgresError) -> Bool {
        let rows = try await pool.query(JobSQL.shared.snoozeHeld, Self.oneHeldBinds(job) + [.double(max(0, delay.seconds))])
        return !rows.rows.isEmpty
    }

    /// Discards the job without retrying and opens its dead letter (through `deadLetters`) in the
    /// same statement, with `reason` and, as its error, the text `JobOutcome.discard(reason,
    /// message:)` records.
    /// - Parameter message: text for operators; no secrets.
    /// - Returns: false when the claim was no longer held.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func discard(_ job: Job, reason: DeadLetterReason, message: String) async throws(PostgresError) -> Bool {
        let error = JobOutcome.discard(reason, message: message).recordedError ?? message
        let rows = try await pool.query(finishing.discardHeld, Self.oneHeldBinds(job) + [
            .text(Self.errorText(error)), .text(reason.rawValue),
        ])
        return !rows.rows.isEmpty
    }

    /// Hands held jobs back as `available`, giving their attempt back; for a worker that stops
    /// before they finish.
    /// - Returns: the ids released.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func release(_ jobs: [Job]) async throws(PostgresError) -> Set<Int64> {
        try await perWorker(jobs) { worker, held throws(PostgresError) in
            try await pool.query(JobSQL.shared.releaseHeld, Self.heldBinds(held, worker))
        }
    }

    /// Applies `outcome` to the job: the single place the worker turns a handler's answer into a
    /// statement.
    /// - Returns: false when the claim was no longer held.
    @discardableResult
    public func record(_ outcome: JobOutcome, for job: Job) async throws(PostgresError) -> Bool {
        switch outcome {
        case .succeeded: return try await complete(job)
        case .retry(let error): return try await fail(job, error: error) != nil
        case .snooze(let delay): return try await snooze(job, for: delay)
        case .discard(let reason, let message): return try await discard(job, reason: reason, message: message)
        }
    }

    // MARK: Jobs nobody holds
    //
    // Static: they run on the caller's connection, inside its transaction, and need no pool,
    // channel or retry policy, so a feature's hook that has only a connection can call them. They
    // notify no worker; workers find the jobs on their next poll.

    /// Makes the waiting jobs of `kind` with these unique keys due now: available or retryable
    /// jobs whose `run_at` is later (a backoff, a snooze). Due, running and finished jobs are
    /// left alone; no attempt is given back. Runs on `connection`, inside the caller's
    /// transaction, so the wake commits with the change that caused it.
    /// - Returns: the ids woken.
    /// - Throws: `PostgresError`.
    @discardableResult
    public static func wake(kind: String, uniqueKeys: [String], on connection: PostgresConnection) async throws(PostgresError) -> [Int64] {
        guard !uniqueKeys.isEmpty else { return [] }
        return try await ids(connection.query(JobSQL.shared.wakeByKeys, [.text(kind), try Self.textArray(uniqueKeys)]))
    }

    /// Puts the jobs of `kind` with these unique keys that are in one of `states` back in the
    /// queue: available and due now, and a discarded one with its attempts back. `errors` is kept.
    /// A job's open dead letter is the caller's to resolve.
    /// - Parameter states: which jobs to take; `running` and `succeeded` are never taken (a
    ///   running job belongs to its worker, a succeeded one is done).
    /// - Returns: the ids requeued.
    /// - Throws: `PostgresError`.
    @discardableResult
    public static func requeue(kind: String, uniqueKeys: [String], from states: Set<JobState>,
                        on connection: PostgresConnection) async throws(PostgresError) -> [Int64] {
        let states = states.subtracting([.running, .succeeded])
        guard !uniqueKeys.isEmpty, !states.isEmpty else { return [] }
        return try await ids(connection.query(JobSQL.shared.requeueByKeys, [
            .text(kind), try Self.textArray(uniqueKeys), try Self.textArray(states.map(\.rawValue).sorted()),
        ]))
    }

    /// An operator's replay of job `id`: a discarded or retryable job becomes available and due
    /// now with its attempts from zero; `errors` is kept. Runs on `connection`, in the caller's
    /// transaction (the one that resolves the job's dead letter).
    /// - Returns: false when the job is running, succeeded, cancelled, already available or gone.
    /// - Throws: `PostgresError`.
    public static func requeue(id: Int64, on connection: PostgresConnection) async throws(PostgresError) -> Bool {
        try await !connection.query(JobSQL.shared.requeueByID, [.int(id)]).rows.isEmpty
    }

    /// Deletes up to `limit` succeeded and cancelled jobs finalized before `cutoff`, for retention,
    /// which calls it batch by batch until a batch comes back short. Discarded jobs stay with their
    /// dead letters; waiting and running ones are never touched. Runs on `connection`, one
    /// statement (its own transaction unless the caller has one open there).
    /// - Returns: how many jobs were deleted.
    /// - Throws: `PostgresError`.
    public static func deleteFinished(before cutoff: Date, limit: Int,
                                      on connection: PostgresConnection) async throws(PostgresError) -> Int {
        guard limit > 0 else { return 0 }
        return try await connection.query(JobSQL.shared.deleteFinished, [.timestamptz(cutoff), .int(Int64(limit))]).affectedRows
    }

    // MARK: Helpers

    private static func ids(_ rows: PostgresRows) throws(PostgresError) -> [Int64] {
        try rows.rows.map { row throws(PostgresError) in try row.decode("id", as: Int64.self) }
    }

    private static func textArray(_ texts: [String]) throws(PostgresError) -> PostgresValue {
        var array = PostgresArray(.text, capacity: texts.reduce(0) { $0 + $1.utf8.count + 4 })
        for text in texts { try array.append(text) }
        return .array(array)
    }


    private func perWorker(_ jobs: [Job],
                           _ statement: (String, [Job]) async throws(PostgresError) -> PostgresRows)
        async throws(PostgresError) -> Set<Int64>
    {
        var done = Set<Int64>()
        for (worker, held) in Dictionary(grouping: jobs, by: \.worker) {
            for row in try await statement(worker, held).rows { done.insert(try row.decode("id", as: Int64.self)) }
        }
        return done
    }

    private static func heldBinds(_ jobs: [Job], _ worker: String) -> [PostgresValue] {
        [.integerArray(jobs.map(\.id)), .integerArray(jobs.map(\.attempt)), .text(worker)]
    }

    private static func oneHeldBinds(_ job: Job) -> [PostgresValue] {
        [.int(job.id), .int(Int64(job.attempt)), .text(job.worker)]
    }

    /// PostgreSQL text cannot hold NUL, and an error must never make recording the error fail.
    static func errorText(_ text: String) -> String {
        var cleaned = text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
        if cleaned.count > 4000 { cleaned = String(cleaned.prefix(4000)) + "…" }
        return cleaned
    }
}
