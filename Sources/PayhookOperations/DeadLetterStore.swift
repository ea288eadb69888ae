package import PayhookCore
package import PayhookPostgres
package import PayhookQueue

/// Opens and resolves dead letters, for inbound events and for jobs: the one place that writes
/// `dead_letters` rows outside an operator's replay or discard (`DeadLetterOperations`).
///
/// Every call runs on the caller's connection, inside the transaction that made the work fail or
/// settle, so a letter is never opened or resolved apart from the change it records. Jobs'
/// letters are opened by the queue itself, in the statement that discards them, through
/// ``jobSink``; that is how a module below this one records letters without writing them.
package enum DeadLetterStore {
    /// The insert the queue splices into its discarding statements.
    package static let jobSink = JobDeadLetterSink(insertForDiscardedJobs: OperationsSQL.insertDiscardedJobLetters)

    /// Opens the letter of an inbound event that will not be retried; nothing happens while the
    /// event has an open letter already.
    /// - Parameter error: safe to show operators (no body, no secret).
    /// - Throws: `PostgresError`.
    package static func openForInboundEvent(id: Int64, provider: String, reason: DeadLetterReason, error: String,
                                            on connection: PostgresConnection) async throws(PostgresError) {
        try await connection.query(OperationsSQL.shared.openInboundLetter, [.int(id), .text(provider), .text(reason.rawValue), .text(error)])
    }

    /// Resolves the open letters of the jobs `jobIDs`, as payhook or an operator (`actor`).
    /// - Parameter status: `.replayed` (the work runs again) or `.discarded` (nothing is left to do).
    /// - Returns: the ids of the letters resolved.
    /// - Throws: `PostgresError`.
    @discardableResult
    package static func resolveJobLetters(jobIDs: [Int64], as status: DeadLetter.Status, by actor: String, note: String,
                                          on connection: PostgresConnection) async throws(PostgresError) -> [Int64] {
        guard !jobIDs.isEmpty else { return [] }
        return try await letterIDs(connection.query(OperationsSQL.shared.resolveJobLetters, [
            .integerArray(jobIDs), .text(status.rawValue), .text(actor), .text(note),
        ]))
    }

    /// Resolves the open letter of the job of `kind` with `uniqueKey`; see
    /// ``resolveJobLetters(jobIDs:as:by:note:on:)``.
    @discardableResult
    package static func resolveJobLetter(kind: String, uniqueKey: String, as status: DeadLetter.Status, by actor: String,
                                         note: String, on connection: PostgresConnection) async throws(PostgresError) -> [Int64] {
        try await letterIDs(connection.query(OperationsSQL.shared.resolveJobLettersByKey, [
            .text(kind), .text(uniqueKey), .text(status.rawValue), .text(actor), .text(note),
        ]))
    }

    private static func letterIDs(_ rows: PostgresRows) throws(PostgresError) -> [Int64] {
        try rows.rows.map { row throws(PostgresError) in try row.decode("id", as: Int64.self) }
    }
}

extension JobQueue {
    /// A queue whose discarded jobs get their dead letters from ``DeadLetterStore``: how every
    /// feature and the worker build theirs.
    package init(pool: PostgresPool, channel: String = JobQueue.defaultChannel, retryPolicy: RetryPolicy = .standard,
                 defaultMaxAttempts: Int = 25, unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.init(pool: pool, deadLetters: DeadLetterStore.jobSink, channel: channel, retryPolicy: retryPolicy,
                  defaultMaxAttempts: defaultMaxAttempts, unitRandom: unitRandom)
    }
}
