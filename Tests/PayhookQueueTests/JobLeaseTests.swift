import Foundation
import PayhookPostgres
import PayhookQueue
import PayhookTestSupport
import Synchronization
import Testing

/// A handler's outside call (a provider charge) must never run while another worker may hold
/// the same job: these tests hold `JobLease` and the worker to that.
@Suite("Job leases seen by handlers", .timeLimit(.minutes(5)))
struct JobLeaseTests {
    /// A call that runs until cancelled; returns whether it was cancelled.
    private static func untilCancelled() async -> Bool {
        do {
            try await Task.sleep(for: .seconds(60))
            return false
        } catch {
            return true
        }
    }

    @Test("a lost lease cancels the call in flight at once and refuses to start another")
    func loseCancels() async throws {
        let lease = JobLease(expiresAt: .now + .seconds(60), margin: .seconds(5))
        let call = Task { try await lease.whileHeld { await Self.untilCancelled() } }
        while !(lease.isHeld) { await Task.yield() }
        try await Task.sleep(for: .milliseconds(50))
        lease.lose()
        #expect(try await call.value == true)
        #expect(!lease.isHeld)
        await #expect(throws: JobLeaseExpired.self) { _ = try await lease.whileHeld { 1 } }
    }

    @Test("a lease nobody renews cancels its call margin before it ends; a renewal moves the end")
    func expiryCancels() async throws {
        let lease = JobLease(expiresAt: .now + .milliseconds(1_500), margin: .milliseconds(500))
        lease.renew(until: .now + .seconds(2))
        let started = ContinuousClock.now
        let cancelled = try await lease.whileHeld { await Self.untilCancelled() }
        #expect(cancelled)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(!lease.isHeld)
        await #expect(throws: JobLeaseExpired.self) { _ = try await lease.whileHeld { 1 } }
    }

    @Test("when a worker's heartbeats stop, its leased call ends before another worker, after the rescue, starts its own")
    func callsNeverOverlap() async throws {
        try await QueueDatabase.withFixture { db in
            let intervals = Mutex<[(worker: String, start: ContinuousClock.Instant, end: ContinuousClock.Instant)]>([])
            func handler(_ name: String, holds: Duration) -> AnyJobHandler {
                AnyJobHandler(kind: "charge") { _ in
                    let lease = try #require(JobLease.current)
                    let start = ContinuousClock.now
                    defer { intervals.withLock { $0.append((name, start, ContinuousClock.now)) } }
                    do {
                        _ = try await lease.whileHeld { try await Task.sleep(for: holds) }
                        return .succeeded
                    } catch {
                        return .retry(error: "call ended: \(error)")
                    }
                }
            }
            let poolA = PostgresPool(conninfo: db.conninfo, maxConnections: 4)
            let first = try db.startWorker(queue: db.queue(pool: poolA), handlers: [handler("a", holds: .seconds(30))],
                                           name: "a", lease: .seconds(3), listen: false)
            let id = try #require(try await db.queue().enqueue(kind: "charge"))
            #expect(await eventually(timeout: .seconds(20)) { await db.state(id) == "running" })
            // Worker a can no longer reach the database: no heartbeat renews its lease.
            let closing = Task { await poolA.close() }
            let second = try db.startWorker(handlers: [handler("b", holds: .milliseconds(100))], name: "b",
                                            lease: .seconds(30), listen: false, rescueInterval: .milliseconds(200))
            #expect(await eventually(timeout: .seconds(30)) { await db.state(id) == "succeeded" })
            await second.stop()
            first.task.cancel()
            await first.task.value
            await closing.value
            let calls = intervals.withLock { $0 }
            let a = try #require(calls.first { $0.worker == "a" })
            let b = try #require(calls.first { $0.worker == "b" })
            #expect(a.end <= b.start, "worker a was still in its call when worker b started")
        }
    }
}
