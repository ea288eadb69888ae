public import Foundation
import PayhookPostgres

/// The closed set of states a row of `jobs` can be in, stored as text.
///
/// `available` and `retryable` are claimable once `run_at` has passed; `running` holds a lease;
/// `succeeded`, `discarded` and `cancelled` are final (`finalized_at` is set).
public enum JobState: String, Sendable, Hashable, CaseIterable {
    case available, running, retryable, succeeded, discarded, cancelled
}

/// One claimed job, as a handler sees it.
///
/// A value copied out of the claiming statement: it does not change when the row does. The pair
/// (`id`, `attempt`) together with `worker` is the claim's identity; every completion statement
/// checks all three, so a worker whose lease was taken over cannot finish someone else's attempt.
public struct Job: Sendable, Hashable {
    /// The row's primary key.
    public let id: Int64
    /// Which handler runs it.
    public let kind: String
    /// The payload as JSON text (normalized by `jsonb`); see `decodeArgs(_:)`.
    public let payload: String
    /// The deduplication key given at enqueue, if any.
    public let uniqueKey: String?
    /// This attempt's number, starting at 1 (a snooze gives the number back).
    public let attempt: Int
    /// After a failed attempt number `maxAttempts` the job is discarded and dead-lettered.
    public let maxAttempts: Int
    /// The worker that holds the claim.
    public let worker: String
    /// When the job became due.
    public let runAt: Date
    /// When it was enqueued.
    public let createdAt: Date
    /// When the claim lapses unless extended; after that a rescuer may hand the job to another.
    public let leaseExpiresAt: Date

    /// Creates a job value; public so handlers can be unit-tested without a database.
    public init(id: Int64, kind: String, payload: String, uniqueKey: String?, attempt: Int, maxAttempts: Int,
                worker: String, runAt: Date, createdAt: Date, leaseExpiresAt: Date) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.uniqueKey = uniqueKey
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.worker = worker
        self.runAt = runAt
        self.createdAt = createdAt
        self.leaseExpiresAt = leaseExpiresAt
    }

    /// True when a failure of this attempt discards the job instead of retrying it.
    public var isLastAttempt: Bool { attempt >= maxAttempts }

    /// Reads the payload as `Args`, with the project's JSON reader.
    /// - Throws: `JobPayloadError`, which names keys but never quotes payload values.
    package func decodeArgs<Args: JobArgs>(_ type: Args.Type = Args.self) throws(JobPayloadError) -> Args {
        try Args(payload: JobPayload(json: payload))
    }

    /// Reads the columns `JobSQL.shared.claimDue` returns.
    init(row: PostgresRow, worker: String) throws(PostgresError) {
        self.init(id: try row.decode("id"), kind: try row.decode("kind"), payload: try row.decode("payload"),
                  uniqueKey: try row.decode("unique_key"), attempt: try row.decode("attempt"),
                  maxAttempts: try row.decode("max_attempts"), worker: worker, runAt: try row.decode("run_at"),
                  createdAt: try row.decode("created_at"), leaseExpiresAt: try row.decode("lease_expires_at"))
    }
}
