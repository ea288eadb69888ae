// payhook-queue-bench: the two halves of bench/queue, run as separate processes.
//   payhook-queue-bench enqueue --count N [--producers P] [--batch B]
//       enqueues N no-op jobs from P tasks, B jobs per transaction (one
//       statement: JobQueue.enqueue(_:on:) when B > 1); prints the rate.
//   payhook-queue-bench work --until N [--concurrency C] [--name NAME]
//       runs a JobWorker with a no-op handler until N jobs in the table have succeeded;
//       prints how many this process ran and for how long.
// DATABASE_URL names the database (migrated by the script).
import Foundation
import PayhookCore
import PayhookPostgres
import PayhookQueue
import Synchronization

struct Options {
    let mode: String
    private let values: [String: String]

    init(_ arguments: [String]) {
        mode = arguments.dropFirst().first ?? ""
        var values = [String: String]()
        var rest = Array(arguments.dropFirst(2))[...]
        while let key = rest.popFirst(), key.hasPrefix("--"), let value = rest.popFirst() {
            values[String(key.dropFirst(2))] = value
        }
        self.values = values
    }

    func int(_ key: String, _ fallback: Int) -> Int { values[key].flatMap(Int.init) ?? fallback }
    func string(_ key: String, _ fallback: String) -> String { values[key] ?? fallback }
}

/// A shared counter; a class so escaping closures can capture it.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func say(_ line: String) {
    // Unbuffered, so the script sees "ready" at once.
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The two modes, as nonisolated functions: top-level code is MainActor-isolated, and the
/// producers and handlers run concurrently off the main actor.
enum QueueBench {
    /// The letter insert `serve` composes the queue with (`DeadLetterStore.jobSink`); the bench
    /// links only the queue, and its jobs never discard, so this only has to be valid.
    static let deadLetters = JobDeadLetterSink(insertForDiscardedJobs: """
        INSERT INTO dead_letters (source, source_id, provider, reason, error)
        SELECT 'job', id, provider, reason, error FROM discarded_jobs
        ON CONFLICT (source, source_id) WHERE status = 'open' DO NOTHING
        """)

    static func enqueue(url: String, options: Options) async {
        let count = options.int("count", 20_000)
        let producers = max(1, options.int("producers", 4))
        let batch = max(1, options.int("batch", 1))
        let pool = PostgresPool(conninfo: url, maxConnections: producers)
        let queue = JobQueue(pool: pool, deadLetters: QueueBench.deadLetters)
        let next = Counter()
        let start = ContinuousClock.now
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<producers {
                    group.addTask {
                        while true {
                            let first = next.value.wrappingAdd(batch, ordering: .relaxed).oldValue
                            if first >= count { return }
                            let size = min(batch, count - first)
                            try await pool.transaction { connection in
                                if size == 1 {
                                    try await queue.enqueue(kind: "noop", on: connection)
                                } else {
                                    try await queue.enqueue(Array(repeating: JobRequest(kind: "noop"), count: size),
                                                            on: connection)
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            fail("enqueue failed: \(error)")
        }
        let elapsed = seconds(ContinuousClock.now - start)
        say(String(format: "enqueue: %d jobs in %.2f s = %.0f jobs/s (%d producers, %d per transaction)",
                   count, elapsed, Double(count) / elapsed, producers, batch))
        await pool.close()
    }

    static func work(url: String, options: Options) async {
        let until = options.int("until", 20_000)
        let concurrency = options.int("concurrency", 100)
        let name = options.string("name", JobWorker.defaultName())
        let pool = PostgresPool(conninfo: url, maxConnections: 4)
        let processed = Counter()
        let worker: JobWorker
        do {
            worker = try JobWorker(
                queue: JobQueue(pool: pool, deadLetters: QueueBench.deadLetters),
                handlers: [AnyJobHandler(kind: "noop") { _ in
                    processed.value.wrappingAdd(1, ordering: .relaxed)
                    return .succeeded
                }],
                configuration: .init(name: name, concurrency: concurrency, pollInterval: .milliseconds(250),
                                     listenConninfo: url, rescueInterval: nil),
                logger: Logger(minimumLevel: .warning) { line in FileHandle.standardError.write(Data((line + "\n").utf8)) })
        } catch {
            fail("\(error)")
        }
        let monitor = PostgresPool(conninfo: url, maxConnections: 1)
        let start = ContinuousClock.now
        let running = Task { await worker.run() }
        say("ready")
        // Cheap on a busy table: max(id) and the pending check both use indexes.
        while true {
            let done = try? await monitor.query("""
                SELECT coalesce(max(id), 0) >= $1
                   AND NOT EXISTS (SELECT 1 FROM jobs WHERE state IN ('available', 'retryable', 'running')) AS done
                FROM jobs
                """, [.int(Int64(until))]).rows.first?.decode("done", as: Bool.self)
            if done == true { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = seconds(ContinuousClock.now - start)
        worker.shutdown(gracePeriod: .seconds(5))
        await running.value
        say(String(format: "worker %@: ran %d jobs; all %d done %.3f s after it started (concurrency %d)",
                   name, processed.value.load(ordering: .relaxed), until, elapsed, concurrency))
        let statistics = worker.statistics
        say(String(format: "    %d claims (%.1f jobs each), %d completion statements (%.1f jobs each)",
                   statistics.claims, Double(statistics.claimedJobs) / Double(max(1, statistics.claims)),
                   statistics.completionBatches,
                   Double(statistics.completedJobs) / Double(max(1, statistics.completionBatches))))
        say(String(format: "elapsed %.6f", elapsed))
        await monitor.close()
        await pool.close()
    }
}

let options = Options(CommandLine.arguments)
guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else { fail("DATABASE_URL is not set") }
switch options.mode {
case "enqueue": await QueueBench.enqueue(url: url, options: options)
case "work": await QueueBench.work(url: url, options: options)
default:
    fail("usage: payhook-queue-bench enqueue --count N [--producers P] [--batch B] | work --until N [--concurrency C] [--name NAME]")
}
