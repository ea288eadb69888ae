package import PayhookPostgres
import PayhookTestSupport

/// "Nothing more arrived" needs a moment when nothing more can arrive, not a sleep: the queue
/// is quiet when no job is available, retryable or running and no inbound event is pending.
/// Every callback a job would send has been sent by then, so a count taken after it is final
/// unless the test itself adds work.
package enum QuietQueue {
    /// Polls until the queue is quiet; false when it is still busy after `timeout`.
    package static func wait(pool: PostgresPool, timeout: Duration = .seconds(60)) async -> Bool {
        await eventually(timeout: timeout) { (try? await outstanding(pool)) == 0 }
    }

    /// Jobs still to run (or running) plus inbound events still to process.
    package static func outstanding(_ pool: PostgresPool) async throws -> Int64 {
        let rows = try await pool.query("""
            SELECT (SELECT count(*) FROM jobs WHERE state IN ('available', 'retryable', 'running'))
                 + (SELECT count(*) FROM inbound_events WHERE status = 'pending') AS n
            """)
        return try rows.rows.first?.decode("n", as: Int64.self) ?? -1
    }
}
