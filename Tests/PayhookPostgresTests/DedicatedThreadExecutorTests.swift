import Foundation
@testable import PayhookPostgres
import PayhookTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("DedicatedThreadExecutor", .timeLimit(.minutes(5)))
struct DedicatedThreadExecutorTests {
    /// The calling thread.
    private static func threadID() -> UInt { UInt(pthread_self()) }

    /// The calling thread's name as the kernel has it (what `ps` and `perf` show).
    private static func threadName() -> String {
        // /proc/thread-self is the task directory of whichever thread opens it.
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .newlines)
    }

    @Test("the executor's thread carries its name, and the thread that made the executor keeps its own")
    func namesItsOwnThread() async {
        let before = Self.threadName()
        let executor = DedicatedThreadExecutor(name: "test-named")
        let creator = Self.threadName()
        // A task that prefers the executor starts on its thread (its first job goes there).
        let (inside, onExecutor) = await Task(executorPreference: executor) {
            (Self.threadName(), DedicatedThreadExecutor.isCurrentThreadDedicated)
        }.value
        #expect(onExecutor)
        #expect(inside == "test-named")
        #expect(creator == before)
        executor.shutdown()
    }

    @Test("a task that prefers the executor runs its statements inline on that one thread, transactions included")
    func statementsRunOnTheDedicatedThread() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 2)
            let executor = DedicatedThreadExecutor(name: "test-dedicated")
            let outside = DedicatedThreadExecutor.isCurrentThreadDedicated
            let (threads, sum, dedicated) = try await withTaskExecutorPreference(executor) {
                var threads: Set<UInt> = [Self.threadID()]
                let sum: Int64 = try await pool.transaction { connection in
                    try await connection.execute("CREATE TABLE numbers (n bigint)")
                    threads.insert(Self.threadID())
                    try await connection.query("INSERT INTO numbers SELECT generate_series(1, $1)", [.int(10)])
                    threads.insert(Self.threadID())
                    let rows = try await connection.query("SELECT sum(n)::bigint AS total FROM numbers")
                    return try rows.rows[0].decode("total")
                }
                threads.insert(Self.threadID())
                return (threads, sum, DedicatedThreadExecutor.isCurrentThreadDedicated)
            }
            #expect(sum == 55)
            #expect(threads.count == 1)
            #expect(dedicated)
            #expect(!outside)
            executor.shutdown()
            await pool.close()
        }
    }

    @Test("a job enqueued after shutdown still runs")
    func lateJobsRun() async throws {
        let executor = DedicatedThreadExecutor(name: "test-late")
        executor.shutdown()
        // Give the thread time to see the shutdown and exit; the task must still complete.
        try await Task.sleep(for: .milliseconds(50))
        let value = await withTaskExecutorPreference(executor) { () async -> Int in
            await Task.yield()
            return 42
        }
        #expect(value == 42)
    }
}
