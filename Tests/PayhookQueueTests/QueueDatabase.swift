import Foundation
import PayhookCore
import PayhookPostgres
import PayhookQueue
import PayhookTestSupport
import Synchronization
import Testing

/// A fresh schema per test, migrated by the shared schema fixture (`TestDatabase`).
enum QueueDatabase {
    /// Runs `body` on a fixture over a fresh migrated schema (`TestDatabase`), dropped afterwards.
    static func withFixture(_ body: (QueueFixture) async throws -> Void) async throws {
        try await TestDatabase.withSchema(migrated: true) { conninfo in
            let fixture = QueueFixture(conninfo: conninfo)
            do {
                try await body(fixture)
            } catch {
                await fixture.pool.close()
                throw error
            }
            await fixture.pool.close()
        }
    }
}

/// One test's database: a pool, and reads of `jobs` and `dead_letters` straight from SQL.
struct QueueFixture: Sendable {
    let conninfo: String
    let pool: PostgresPool

    init(conninfo: String) {
        self.conninfo = conninfo
        pool = PostgresPool(conninfo: conninfo, maxConnections: 6)
    }

    /// A queue with a fast, deterministic backoff unless told otherwise.
    func queue(pool: PostgresPool? = nil, retryPolicy: RetryPolicy = .init(base: .milliseconds(5), maximum: .milliseconds(20), jitter: 0))
        -> JobQueue
    {
        JobQueue(pool: pool ?? self.pool, deadLetters: .queueTests, retryPolicy: retryPolicy, unitRandom: { 1 })
    }

    struct ErrorEntry: Decodable, Sendable {
        let attempt: Int
        let at: String
        let error: String
    }

    struct JobRow: Sendable {
        let state: String
        let attempt: Int
        let errors: [ErrorEntry]
        let lockedBy: String?
    }

    func job(_ id: Int64) async throws -> JobRow {
        let rows = try await pool.query("SELECT state, attempt, errors::text AS errors, locked_by FROM jobs WHERE id = $1", [.int(id)])
        let row = try #require(rows.rows.first)
        let errors = try JSONDecoder().decode([ErrorEntry].self, from: Data(try row.decode("errors", as: String.self).utf8))
        return JobRow(state: try row.decode("state"), attempt: try row.decode("attempt"), errors: errors,
                      lockedBy: try row.decode("locked_by"))
    }

    func state(_ id: Int64) async -> String? {
        try? await pool.query("SELECT state FROM jobs WHERE id = $1", [.int(id)]).rows.first?.decode("state", as: String.self)
    }

    func count(_ whereClause: String = "true") async throws -> Int {
        try await pool.query("SELECT count(*) AS n FROM jobs WHERE \(whereClause)").rows.first?.decode("n", as: Int.self) ?? -1
    }

    struct DeadLetter: Sendable {
        let reason: String
        let error: String?
        let status: String
    }

    func deadLetters(job id: Int64) async throws -> [DeadLetter] {
        try await pool.query(
            "SELECT reason, error, status FROM dead_letters WHERE source = 'job' AND source_id = $1 ORDER BY id", [.int(id)]
        ).rows.map { row in
            DeadLetter(reason: try row.decode("reason"), error: try row.decode("error"), status: try row.decode("status"))
        }
    }

    /// Runs a worker in a task; `stop` shuts it down (gracefully, `grace`) and waits for it.
    func startWorker(queue: JobQueue? = nil, handlers: [AnyJobHandler], name: String = JobWorker.defaultName(),
                     concurrency: Int = 8, lease: Duration = .seconds(30), pollInterval: Duration = .milliseconds(50),
                     listen: Bool = true, rescueInterval: Duration? = nil) throws -> RunningWorker {
        let worker = try JobWorker(
            queue: queue ?? self.queue(), handlers: handlers,
            configuration: .init(name: name, concurrency: concurrency, lease: lease, pollInterval: pollInterval,
                                 listenConninfo: listen ? conninfo : nil, rescueInterval: rescueInterval),
            logger: .silent)
        return RunningWorker(worker: worker, task: Task { await worker.run() })
    }
}

struct RunningWorker: Sendable {
    let worker: JobWorker
    let task: Task<Void, Never>

    func stop(grace: Duration = .zero) async {
        worker.shutdown(gracePeriod: grace)
        await task.value
    }
}

/// Counts handler calls per job id.
final class CallCounter: Sendable {
    private let counts = Mutex<[Int64: Int]>([:])

    @discardableResult
    func record(_ id: Int64) -> Int {
        counts.withLock { counts in
            counts[id, default: 0] += 1
            return counts[id, default: 0]
        }
    }

    var all: [Int64: Int] { counts.withLock { $0 } }
    func calls(_ id: Int64) -> Int { counts.withLock { $0[id] ?? 0 } }
}

extension JobDeadLetterSink {
    /// The letters production opens (`DeadLetterStore.jobSink` in PayhookOperations, which the
    /// queue's tests cannot import): the same insert, so these tests see the same rows.
    static let queueTests = JobDeadLetterSink(insertForDiscardedJobs: """
        INSERT INTO dead_letters (source, source_id, provider, reason, error)
        SELECT 'job', id, provider, reason, error FROM discarded_jobs
        ON CONFLICT (source, source_id) WHERE status = 'open' DO NOTHING
        """)
}
