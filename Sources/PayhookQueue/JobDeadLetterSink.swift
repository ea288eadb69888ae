/// Where the queue records the dead letter of a job it discards.
///
/// The queue sits below the module that owns `dead_letters` (`PayhookOperations`), so it writes
/// no letter itself: the owner gives it the insert at composition, and the queue splices it
/// into the very statement that discards the job, as a data-modifying CTE. A job is therefore
/// never discarded without its letter, nor lettered without being discarded, and a crash between
/// the two cannot happen because there is no between.
///
/// ```swift
/// JobQueue(pool: pool, deadLetters: DeadLetterStore.jobSink)   // composition (PayhookOperations)
/// ```
public struct JobDeadLetterSink: Sendable, Hashable {
    /// An `INSERT … SELECT … FROM discarded_jobs`, without a trailing semicolon, that opens one
    /// letter per row of the CTE `discarded_jobs (id bigint, provider text, reason text, error
    /// text)`, one row per job the statement discarded (`reason` is a `DeadLetterReason`), and
    /// does nothing for a job whose letter is still open.
    public let insertForDiscardedJobs: String

    /// Creates a sink from its insert.
    public init(insertForDiscardedJobs: String) {
        self.insertForDiscardedJobs = insertForDiscardedJobs
    }
}
