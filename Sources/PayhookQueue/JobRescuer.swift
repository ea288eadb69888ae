public import PayhookCore
public import PayhookPostgres

/// Returns jobs whose worker vanished (lease expired while `running`) to the queue.
///
/// Why: a worker killed mid-job (`kill -9`, OOM, lost host) never finishes its claim; without a
/// rescuer the job would stay `running` forever. Expired jobs become `retryable` and due at
/// once, with an entry in `errors`; a job that was on its last attempt is `discarded` with a
/// dead letter instead, so a job that crashes its worker every time cannot loop forever.
///
/// Safe to run in every process at once: rows are locked with SKIP LOCKED, and a worker that
/// finishes late is refused by the claim check (`JobSQL`, `JobFinishingSQL`).
///
/// Threading: a `Sendable` value; `run` is meant to be a long-lived child task.
public struct JobRescuer: Sendable {
    private let pool: PostgresPool
    /// The queue's rescue statement, with its dead-letter sink.
    private let rescueStatement: String
    private let batchSize: Int

    /// Creates a rescuer over the queue's database.
    /// - Parameter batchSize: the most jobs rescued per statement.
    public init(queue: JobQueue, batchSize: Int = 500) {
        pool = queue.pool
        rescueStatement = queue.finishing.rescueExpired
        self.batchSize = max(1, batchSize)
    }

    /// Rescues expired jobs until none is left.
    /// - Returns: how many jobs were returned to the queue or discarded.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func rescueExpired() async throws(PostgresError) -> Int {
        var total = 0
        while true {
            let rows = try await pool.query(rescueStatement, [.int(Int64(batchSize))])
            total += rows.rows.count
            if rows.rows.count < batchSize { return total }
        }
    }

    /// Calls `rescueExpired` now and every `interval` until the task is cancelled; errors are
    /// logged and retried at the next tick.
    public func run(every interval: Duration, logger: Logger) async {
        await PeriodicLoop().run(every: interval) {
            do {
                let rescued = try await rescueExpired()
                if rescued > 0 { logger.warning("rescued jobs whose lease expired", ["jobs.rescued": .init(rescued)]) }
            } catch {
                logger.error("job rescue failed", ["error": .string(String(describing: error))])
            }
        }
    }
}
