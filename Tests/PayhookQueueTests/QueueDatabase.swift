import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookTestSupport
import Synchronization
import Testing

/// A fresh schema per test, migrated with the repository's own `sql/migrations` files.
enum QueueDatabase {
    /// The server under test; a test fails (never skips) when it is not configured.
    static func url() throws -> String {
        let url = ProcessInfo.processInfo.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        return try #require(url, """
            DATABASE_URL is not set. Start a test server with \
            `PAYHOOK_PG_PORT=54336 ops/db start` and run `DATABASE_URL=<printed url> swift test`.
            """)
    }

    /// Every `sql/migrations/*.sql` file, read from disk (the app embeds them; tests read them).
    static func migrations() throws -> [Migration] {
        let directory = RepositoryPaths.root + "/sql/migrations"
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }
        return try names.map { name in
            try Migration(fileName: name, sql: String(contentsOfFile: directory + "/" + name, encoding: .utf8))
        }
    }

    /// Creates a schema, migrates it, hands `body` a fixture on it, and drops the schema.
    static func withFixture(_ body: (QueueFixture) async throws -> Void) async throws {
        let base = try url()
        let schema = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let admin = try await PostgresConnection.connect(base)
        defer { admin.close() }
        try await admin.execute("CREATE SCHEMA \(schema)")
        let conninfo = conninfo(base, searchPath: schema)
        let fixture = QueueFixture(conninfo: conninfo)
        do {
            let migrator = PostgresMigrator(conninfo: conninfo, migrations: try migrations())
            try await SchemaMigrationGate.run { try await migrator.migrate() }
            try await body(fixture)
        } catch {
            await fixture.pool.close()
            try? await admin.execute("DROP SCHEMA \(schema) CASCADE")
            throw error
        }
        await fixture.pool.close()
        try? await admin.execute("DROP SCHEMA \(schema) CASCADE")
    }

    /// `base` with `options=-c search_path=<schema>` added, for URIs and key=value strings.
    static func conninfo(_ base: String, searchPath schema: String) -> String {
        if base.contains("://") {
            return base + (base.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)"
        }
        return base + " options='-c search_path=\(schema)'"
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
