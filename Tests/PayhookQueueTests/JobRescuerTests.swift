import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookTestSupport
import Testing

/// Every `payhook serve` with the worker role runs a rescuer, so several always run at once
/// against one database.
@Suite("Job rescuer", .timeLimit(.minutes(5)))
struct JobRescuerTests {
    @Test("two rescuers with their own pools, at once over many expired jobs, rescue each once and dead-letter each exhausted one once")
    func twoRescuersAtOnce() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            // Half the jobs still have attempts left (they go back to the queue), half were on
            // their last one (they are discarded with a dead letter).
            try await db.pool.transaction { connection in
                for n in 0..<600 {
                    try await queue.enqueue(kind: "retry-left", payload: #"{"n": \#(n)}"#, maxAttempts: 5, on: connection)
                    try await queue.enqueue(kind: "last-attempt", payload: #"{"n": \#(n)}"#, maxAttempts: 1, on: connection)
                }
            }
            let claimed = try await queue.claim(limit: 1200, kinds: ["retry-left", "last-attempt"], worker: "vanished",
                                                lease: .seconds(60))
            #expect(claimed.count == 1200)
            // The worker that claimed them stopped renewing its leases long ago.
            try await db.pool.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE state = 'running'")

            // Small batches, so the two rescuers' statements interleave many times over.
            let otherPool = PostgresPool(conninfo: db.conninfo, maxConnections: 2)
            let first = JobRescuer(queue: queue, batchSize: 25)
            let second = JobRescuer(queue: db.queue(pool: otherPool), batchSize: 25)
            async let firstRescued = first.rescueExpired()
            async let secondRescued = second.rescueExpired()
            let rescued = try await (firstRescued, secondRescued)
            // A late pass finds nothing left: nothing was skipped for good either.
            let late = try await first.rescueExpired()
            await otherPool.close()

            #expect(rescued.0 + rescued.1 == 1200, "rescued \(rescued.0) + \(rescued.1)")
            #expect(late == 0)
            #expect(try await db.count("state = 'running'") == 0)
            #expect(try await db.count("kind = 'retry-left' AND state = 'retryable'") == 600)
            #expect(try await db.count("kind = 'last-attempt' AND state = 'discarded'") == 600)
            // One "lease expired" entry per job: no job was rescued twice.
            #expect(try await db.count("jsonb_array_length(errors) = 1") == 1200)
            let letters = try await db.pool.query("""
                SELECT count(*) AS n, count(DISTINCT d.source_id) AS jobs,
                       count(*) FILTER (WHERE j.kind <> 'last-attempt') AS wrong
                FROM dead_letters d JOIN jobs j ON j.id = d.source_id WHERE d.source = 'job'
                """).rows.first
            #expect(try letters?.decode("n", as: Int64.self) == 600)
            #expect(try letters?.decode("jobs", as: Int64.self) == 600)
            #expect(try letters?.decode("wrong", as: Int64.self) == 0)
        }
    }
}
