import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookTestSupport
import Synchronization
import Testing

@Suite("Job worker", .timeLimit(.minutes(5)))
struct JobWorkerTests {
    @Test("two workers with their own pools run each of 200 jobs exactly once")
    func twoWorkersExactlyOnce() async throws {
        try await QueueDatabase.withFixture { db in
            let calls = CallCounter()
            let handler = AnyJobHandler(kind: "noop") { job in
                calls.record(job.id)
                return .succeeded
            }
            let otherPool = PostgresPool(conninfo: db.conninfo, maxConnections: 4)
            let first = try db.startWorker(handlers: [handler], name: "w1")
            let second = try db.startWorker(queue: db.queue(pool: otherPool), handlers: [handler], name: "w2")
            let queue = db.queue()
            try await db.pool.transaction { connection in
                for n in 0..<200 { try await queue.enqueue(kind: "noop", payload: #"{"n": \#(n)}"#, on: connection) }
            }
            let done = await eventually(timeout: .seconds(60)) { (try? await db.count("state = 'succeeded'")) == 200 }
            await first.stop()
            await second.stop()
            await otherPool.close()
            #expect(done)
            #expect(calls.all.count == 200)
            #expect(calls.all.values.allSatisfy { $0 == 1 })
            #expect(try await db.count("attempt = 1 AND state = 'succeeded'") == 200)
        }
    }

    @Test("a failing job is retried with backoff until max_attempts, then discarded with a dead letter and its error history")
    func retriesThenDeadLetter() async throws {
        try await QueueDatabase.withFixture { db in
            let calls = CallCounter()
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "flaky") { job in
                calls.record(job.id)
                return .retry(error: "merchant answered 503 on attempt \(job.attempt)")
            }])
            let id = try #require(try await db.queue().enqueue(kind: "flaky", maxAttempts: 3))
            let discarded = await eventually(timeout: .seconds(30)) { await db.state(id) == "discarded" }
            await worker.stop()
            #expect(discarded)
            #expect(calls.calls(id) == 3)
            let row = try await db.job(id)
            #expect(row.attempt == 3)
            #expect(row.errors.map(\.attempt) == [1, 2, 3])
            #expect(row.errors.map(\.error) == (1...3).map { "merchant answered 503 on attempt \($0)" })
            let letters = try await db.deadLetters(job: id)
            #expect(letters.count == 1)
            #expect(letters.first?.reason == "max_attempts_exceeded")
            #expect(letters.first?.error == "merchant answered 503 on attempt 3")
            #expect(letters.first?.status == "open")
        }
    }

    @Test("a thrown error counts as a failed attempt and is recorded")
    func thrownErrorRetries() async throws {
        struct MerchantDown: Error, CustomStringConvertible { var description: String { "merchant unreachable" } }
        try await QueueDatabase.withFixture { db in
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "throws") { job in
                if job.attempt == 1 { throw MerchantDown() }
                return .succeeded
            }])
            let id = try #require(try await db.queue().enqueue(kind: "throws"))
            let done = await eventually { await db.state(id) == "succeeded" }
            await worker.stop()
            #expect(done)
            let row = try await db.job(id)
            #expect(row.attempt == 2 && row.errors.map(\.error) == ["merchant unreachable"])
        }
    }

    @Test("a snooze runs the job again later without counting an attempt")
    func snoozeDoesNotCount() async throws {
        try await QueueDatabase.withFixture { db in
            let calls = CallCounter()
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "waits") { job in
                calls.record(job.id) < 3 ? .snooze(.milliseconds(10)) : .succeeded
            }])
            let id = try #require(try await db.queue().enqueue(kind: "waits", maxAttempts: 1))
            let done = await eventually { await db.state(id) == "succeeded" }
            await worker.stop()
            #expect(done)
            #expect(calls.calls(id) == 3)
            let row = try await db.job(id)
            #expect(row.attempt == 1)
            #expect(row.errors.isEmpty)
            #expect(try await db.deadLetters(job: id).isEmpty)
        }
    }

    @Test("a discard stops retries at once and leaves a dead letter with the reason")
    func discardStops() async throws {
        try await QueueDatabase.withFixture { db in
            let calls = CallCounter()
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "mismatch") { job in
                calls.record(job.id)
                return .discard(.discardedByHandler, message: "amount mismatch: expected 1999 EUR")
            }])
            let id = try #require(try await db.queue().enqueue(kind: "mismatch", maxAttempts: 10))
            let discarded = await eventually { await db.state(id) == "discarded" }
            // A later job of the same kind running proves the worker kept polling meanwhile.
            let later = try #require(try await db.queue().enqueue(kind: "mismatch"))
            let laterRan = await eventually { calls.calls(later) == 1 }
            await worker.stop()
            #expect(discarded && laterRan)
            #expect(calls.calls(id) == 1)
            let row = try await db.job(id)
            #expect(row.attempt == 1 && row.errors.map(\.error) == ["amount mismatch: expected 1999 EUR"])
            let letters = try await db.deadLetters(job: id)
            #expect(letters.map(\.reason) == ["discarded_by_handler"])
            #expect(letters.first?.error == "amount mismatch: expected 1999 EUR")
        }
    }

    @Test("a job whose worker died mid-job is rescued after its lease expires and completed once")
    func rescuedAfterCrash() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let id = try #require(try await queue.enqueue(kind: "fulfill"))
            // The "crashed" worker: claims, then never finishes or renews.
            let claimed = try await queue.claim(limit: 1, kinds: ["fulfill"], worker: "crashed", lease: .milliseconds(200))
            #expect(claimed.map(\.id) == [id])
            let calls = CallCounter()
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "fulfill") { job in
                calls.record(job.id)
                return .succeeded
            }], rescueInterval: .milliseconds(50))
            let done = await eventually(timeout: .seconds(20)) { await db.state(id) == "succeeded" }
            await worker.stop()
            #expect(done)
            #expect(calls.all == [id: 1])
            let row = try await db.job(id)
            #expect(row.attempt == 2)
            #expect(row.errors.map(\.attempt) == [1])
            #expect(try await queue.complete(claimed[0]) == false)
        }
    }

    @Test("a NOTIFY wakes an idle worker without waiting for the polling interval")
    func listenWakesWorker() async throws {
        try await QueueDatabase.withFixture { db in
            let calls = CallCounter()
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "ping") { job in
                calls.record(job.id)
                return .succeeded
            }], pollInterval: .seconds(3600))
            let queue = db.queue()
            let first = try #require(try await queue.enqueue(kind: "ping"))
            let firstRan = await eventually(timeout: .seconds(10)) { calls.calls(first) == 1 }
            // The worker is idle now; only a notification can wake it within the hour.
            let second = try #require(try await db.pool.transaction { connection in
                try await queue.enqueue(kind: "ping", on: connection)
            })
            let secondRan = await eventually(timeout: .seconds(10)) { calls.calls(second) == 1 }
            await worker.stop()
            #expect(firstRan && secondRan)
        }
    }

    @Test("a graceful stop finishes what it can within the deadline, releases the rest and leaves nothing running")
    func gracefulStop() async throws {
        try await QueueDatabase.withFixture { db in
            let proceed = Latch()
            let started = CallCounter()
            let worker = try db.startWorker(handlers: [
                AnyJobHandler(kind: "quick") { job in
                    started.record(job.id)
                    await proceed.wait()
                    return .succeeded
                },
                AnyJobHandler(kind: "stuck") { job in
                    started.record(job.id)
                    try await Task.sleep(for: .seconds(3600))
                    return .succeeded
                },
            ])
            let queue = db.queue()
            let quick = try #require(try await queue.enqueue(kind: "quick"))
            let stuck = try #require(try await queue.enqueue(kind: "stuck"))
            #expect(await eventually { started.all.count == 2 })
            worker.worker.shutdown(gracePeriod: .seconds(2))
            let late = try #require(try await queue.enqueue(kind: "quick"))
            proceed.open()
            await worker.task.value

            #expect(try await db.count("state = 'running'") == 0)
            #expect(try await db.job(quick).state == "succeeded")
            let released = try await db.job(stuck)
            #expect(released.state == "available" && released.attempt == 0 && released.lockedBy == nil)
            let untouched = try await db.job(late)
            #expect(untouched.state == "available" && untouched.attempt == 0)
            #expect(started.calls(late) == 0)
        }
    }

    @Test("no more than `concurrency` handlers run at once, and the rest run as slots free up")
    func concurrencyBound() async throws {
        final class Gauge: Sendable {
            let counts = Mutex((now: 0, peak: 0))
            func enter() { counts.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) } }
            func leave() { counts.withLock { $0.now -= 1 } }
            var now: Int { counts.withLock { $0.now } }
            var peak: Int { counts.withLock { $0.peak } }
        }
        try await QueueDatabase.withFixture { db in
            let gauge = Gauge()
            let proceed = Latch()
            let worker = try db.startWorker(handlers: [AnyJobHandler(kind: "slow") { _ in
                gauge.enter()
                await proceed.wait()
                gauge.leave()
                return .succeeded
            }], concurrency: 3)
            let queue = db.queue()
            try await db.pool.transaction { connection in
                try await queue.enqueue(Array(repeating: JobRequest(kind: "slow"), count: 10), on: connection)
            }
            let filled = await eventually { gauge.now == 3 }
            let heldBack = try await db.count("state = 'available'")
            proceed.open()
            let done = await eventually(timeout: .seconds(30)) { (try? await db.count("state = 'succeeded'")) == 10 }
            await worker.stop()
            #expect(filled && done)
            #expect(heldBack == 7)
            #expect(gauge.peak == 3)
        }
    }

    @Test("two handlers for one kind are a configuration error")
    func duplicateKinds() throws {
        let pool = PostgresPool(conninfo: "host=/nonexistent", maxConnections: 1)
        let handler = AnyJobHandler(kind: "a") { _ in .succeeded }
        #expect(throws: JobWorkerConfigurationError.self) {
            try JobWorker(queue: JobQueue(pool: pool, deadLetters: .queueTests), handlers: [handler, handler],
                          configuration: .init(listenConninfo: nil), logger: .silent)
        }
    }
}
