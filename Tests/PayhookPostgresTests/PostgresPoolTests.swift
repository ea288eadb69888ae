import Foundation
import PayhookPostgres
import PayhookTestSupport
import Synchronization
import Testing

@Suite("PostgresPool", .timeLimit(.minutes(5)))
struct PostgresPoolTests {
    @Test("the pool never opens more than maxConnections; the next caller waits, then times out")
    func boundedWithTimeout() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 2, acquireTimeout: .milliseconds(300))
            let release = Latch()
            let holders = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<2 {
                        group.addTask { try await pool.withConnection { _ in await release.wait() } }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(await eventually { pool.statistics.inUse == 2 })

            let started = ContinuousClock.now
            let error = try #require(await captureError { try await pool.query("SELECT 1") })
            let waited = ContinuousClock.now - started
            #expect(error.kind == .poolTimeout)
            #expect(waited >= .milliseconds(250))
            #expect(pool.statistics.open == 2)
            #expect(pool.statistics.waiting == 0)

            release.open()
            try await holders.value
            #expect(pool.statistics == PostgresPoolStatistics(open: 2, idle: 2, inUse: 0, waiting: 0))
            await pool.close()
            #expect(pool.statistics.open == 0)
        }
    }

    @Test("waiters are served first-in, first-out when a connection comes back")
    func fifoWaiters() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, acquireTimeout: .seconds(10))
            let release = Latch()
            let holder = Task { try await pool.withConnection { _ in await release.wait() } }
            #expect(await eventually { pool.statistics.inUse == 1 })

            let order = OrderRecorder()
            let first = Task { try await pool.withConnection { _ in order.append("first") } }
            #expect(await eventually { pool.statistics.waiting == 1 })
            let second = Task { try await pool.withConnection { _ in order.append("second") } }
            #expect(await eventually { pool.statistics.waiting == 2 })

            release.open()
            try await holder.value
            try await first.value
            try await second.value
            #expect(order.items == ["first", "second"])
            #expect(pool.statistics.open == 1)
            await pool.close()
        }
    }

    @Test("many concurrent queries share a small pool and all succeed")
    func concurrentQueries() async throws {
        try await TestDatabase.withSchema { conninfo in
            // This checks sharing, not waiting: the acquire deadline is far above what 40
            // five-millisecond queries need, because at the start of a full run every suite
            // connects at once and opening the three sessions alone was seen to pass 5 s.
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 3, acquireTimeout: .seconds(60))
            let sums = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let rows = try await pool.query("SELECT $1::int8 + 1 AS n, pg_sleep(0.005)", [.int(Int64(index))])
                        return try rows.rows.first?.decode("n", as: Int.self) ?? -1
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(sums == (1...40).reduce(0, +))
            #expect(pool.statistics.open <= 3)
            await pool.close()
        }
    }

    @Test("a broken connection is discarded and the next checkout connects anew")
    func brokenDiscarded() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            let firstPID = try await pool.query("SELECT pg_backend_pid() AS pid").rows.first?.decode("pid", as: Int.self)
            let killed = try #require(await captureError {
                try await pool.query("SELECT pg_terminate_backend(pg_backend_pid())")
            })
            #expect(killed.kind == .connectionLost)
            #expect(pool.statistics.open == 0)
            let secondPID = try await pool.query("SELECT pg_backend_pid() AS pid").rows.first?.decode("pid", as: Int.self)
            #expect(secondPID != nil)
            #expect(secondPID != firstPID)
            await pool.close()
        }
    }

    @Test("an idle connection killed behind the pool's back is replaced at checkout")
    func staleIdleReplaced() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            let pid = try #require(try await pool.query("SELECT pg_backend_pid() AS pid").rows.first?.decode("pid", as: Int.self))
            let admin = try await PostgresConnection.connect(conninfo)
            try await admin.query("SELECT pg_terminate_backend($1::int4)", [.int(Int64(pid))])
            #expect(await eventually {
                (try? await admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1::int4", [.int(Int64(pid))])
                    .rows.first?.decode("n", as: Int.self)) == 0
            })
            admin.close()
            // The dead session is noticed at checkout, so this query succeeds on a new one.
            let newPID = try await pool.query("SELECT pg_backend_pid() AS pid").rows.first?.decode("pid", as: Int.self)
            #expect(newPID != pid)
            await pool.close()
        }
    }

    @Test("a transaction through the pool rolls back on throw and the connection is reused")
    func poolTransaction() async throws {
        struct Boom: Error {}
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            try await pool.query("CREATE TABLE events (id int8 PRIMARY KEY)")
            await #expect(throws: Boom.self) {
                try await pool.transaction { connection in
                    try await connection.query("INSERT INTO events VALUES (1)")
                    throw Boom()
                }
            }
            try await pool.transaction { connection in try await connection.query("INSERT INTO events VALUES (2)") }
            let ids = try await pool.query("SELECT id FROM events").map { try $0.decode("id", as: Int.self) }
            #expect(ids == [2])
            #expect(pool.statistics.open == 1)
            await pool.close()
        }
    }

    @Test("a connection handed back inside an open transaction is discarded, not reused")
    func openTransactionDiscarded() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            try await pool.query("CREATE TABLE t (id int8)")
            try await pool.withConnection { connection in
                try await connection.execute("BEGIN")
                try await connection.query("INSERT INTO t VALUES (1)")
            }
            #expect(pool.statistics.open == 0)
            #expect(try await pool.query("SELECT count(*) AS n FROM t").rows.first?.decode("n", as: Int.self) == 0)
            await pool.close()
        }
    }

    @Test("closing the pool fails queued callers and later checkouts with poolClosed")
    func closeFailsWaiters() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, acquireTimeout: .seconds(30))
            let release = Latch()
            let holder = Task { try await pool.withConnection { _ in await release.wait() } }
            #expect(await eventually { pool.statistics.inUse == 1 })
            let waiter = Task { try await pool.query("SELECT 1") }
            #expect(await eventually { pool.statistics.waiting == 1 })

            let closing = Task { await pool.close() }
            let waiterError = try #require(await captureError { _ = try await waiter.value })
            #expect(waiterError.kind == .poolClosed)
            release.open()
            try await holder.value
            await closing.value
            #expect(pool.statistics.open == 0)
            let later = try #require(await captureError { try await pool.query("SELECT 1") })
            #expect(later.kind == .poolClosed)
        }
    }

    @Test("a cancelled waiter leaves the queue at once")
    func cancelledWaiter() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, acquireTimeout: .seconds(30))
            let release = Latch()
            let holder = Task { try await pool.withConnection { _ in await release.wait() } }
            #expect(await eventually { pool.statistics.inUse == 1 })
            let waiter = Task { try await pool.query("SELECT 1") }
            #expect(await eventually { pool.statistics.waiting == 1 })
            waiter.cancel()
            let error = try #require(await captureError { _ = try await waiter.value })
            #expect(error.kind == .queryCanceled)
            #expect(pool.statistics.waiting == 0)
            release.open()
            try await holder.value
            await pool.close()
        }
    }
}

/// Thread-safe append-only list for ordering assertions.
final class OrderRecorder: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ item: String) { storage.withLock { $0.append(item) } }
    var items: [String] { storage.withLock { $0 } }
}
