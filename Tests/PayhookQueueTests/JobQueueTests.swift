import Foundation
import PayhookPostgres
@testable import PayhookQueue
import PayhookTestSupport
import Testing

@Suite("Job store", .timeLimit(.minutes(5)))
struct JobQueueTests {
    @Test("a job enqueued in a transaction that rolls back does not exist")
    func enqueueRollsBack() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            struct Abort: Error {}
            await #expect(throws: Abort.self) {
                try await db.pool.transaction { connection in
                    let id = try await queue.enqueue(kind: "fulfill_order", payload: #"{"order": 1}"#, on: connection)
                    #expect(id != nil)
                    throw Abort()
                }
            }
            #expect(try await db.count() == 0)
            let committed = try await db.pool.transaction { connection in
                try await queue.enqueue(kind: "fulfill_order", payload: #"{"order": 2}"#, on: connection)
            }
            #expect(committed != nil)
            #expect(try await db.count() == 1)
        }
    }

    @Test("deleting finished jobs takes succeeded and cancelled ones finalized before the cutoff, a batch at a time, and nothing else")
    func deleteFinished() async throws {
        try await QueueDatabase.withFixture { db in
            try await db.pool.query("""
                INSERT INTO jobs (kind, unique_key, state, finalized_at) VALUES
                    ('k', 'old-succeeded-1', 'succeeded', now() - interval '9 days'),
                    ('k', 'old-succeeded-2', 'succeeded', now() - interval '9 days'),
                    ('k', 'old-cancelled', 'cancelled', now() - interval '9 days'),
                    ('k', 'old-discarded', 'discarded', now() - interval '9 days'),
                    ('k', 'recent-succeeded', 'succeeded', now() - interval '1 day'),
                    ('k', 'waiting', 'available', NULL)
                """)
            let cutoff = Date().addingTimeInterval(-5 * 86400)
            let batches = try await db.pool.withConnection { connection in
                [try await JobQueue.deleteFinished(before: cutoff, limit: 2, on: connection),
                 try await JobQueue.deleteFinished(before: cutoff, limit: 2, on: connection),
                 try await JobQueue.deleteFinished(before: cutoff, limit: 2, on: connection)]
            }
            #expect(batches == [2, 1, 0])
            let left = try await db.pool.query("SELECT unique_key FROM jobs ORDER BY unique_key").rows
                .map { row in try row.decode("unique_key", as: String.self) }
            #expect(left == ["old-discarded", "recent-succeeded", "waiting"])
        }
    }

    @Test("a second enqueue with the same unique key is a no-op")
    func uniqueKey() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let first = try await queue.enqueue(kind: "fulfill_order", payload: #"{"order": 7}"#, uniqueKey: "fulfill_order:7")
            let second = try await queue.enqueue(kind: "fulfill_order", payload: #"{"order": 7, "again": true}"#,
                                                 uniqueKey: "fulfill_order:7")
            let other = try await queue.enqueue(kind: "fulfill_order", payload: #"{"order": 8}"#, uniqueKey: "fulfill_order:8")
            let unkeyed = try await queue.enqueue(kind: "fulfill_order")
            let unkeyedAgain = try await queue.enqueue(kind: "fulfill_order")
            #expect(first != nil && other != nil && unkeyed != nil && unkeyedAgain != nil)
            #expect(second == nil)
            #expect(try await db.count("unique_key = 'fulfill_order:7'") == 1)
            #expect(try await db.count() == 4)
        }
    }

    @Test("a batch enqueue inserts every new job in one statement and skips existing and repeated keys")
    func batchEnqueue() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            try await queue.enqueue(kind: "charge", uniqueKey: "charge:1")
            let later = Date().addingTimeInterval(3600)
            let ids = try await db.pool.transaction { connection in
                try await queue.enqueue([
                    JobRequest(kind: "charge", payload: #"{"subscription": 1}"#, uniqueKey: "charge:1"),
                    JobRequest(kind: "charge", payload: #"{"subscription": 2}"#, uniqueKey: "charge:2"),
                    JobRequest(kind: "charge", payload: #"{"subscription": 2, "dup": true}"#, uniqueKey: "charge:2"),
                    JobRequest(kind: "charge", payload: #"{"quote": "\"},{\"kind\": \"evil"}"#, maxAttempts: 2),
                    JobRequest(kind: "charge", runAt: later),
                ], on: connection)
            }
            #expect(ids.count == 3)
            #expect(try await db.count() == 4)
            #expect(try await db.count("kind = 'evil'") == 0)
            #expect(try await db.count("max_attempts = 2 AND payload->>'quote' = '\"},{\"kind\": \"evil'") == 1)
            #expect(try await db.count("run_at > now() + interval '50 minutes'") == 1)
            #expect(try await db.count("payload = '{\"subscription\": 2}'") == 1)
            await #expect(throws: PostgresError.self) {
                try await db.pool.transaction { connection in
                    try await queue.enqueue([JobRequest(kind: "charge", payload: #"1, "kind": "x""#)], on: connection)
                }
            }
        }
    }

    @Test("a claim takes due jobs of the asked kinds once, oldest first, and counts the attempt")
    func claim() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let a = try #require(try await queue.enqueue(kind: "a", payload: #"{"n": 1}"#))
            let b = try #require(try await queue.enqueue(kind: "a", payload: #"{"n": 2}"#))
            _ = try await queue.enqueue(kind: "other")
            _ = try await queue.enqueue(kind: "a", runAt: Date().addingTimeInterval(3600))
            let first = try await queue.claim(limit: 10, kinds: ["a"], worker: "w1", lease: .seconds(30))
            #expect(first.map(\.id) == [a, b])
            #expect(first.allSatisfy { $0.attempt == 1 && $0.worker == "w1" && $0.maxAttempts == 25 })
            #expect(try first[0].decodeArgs(CountArgs.self).n == 1)
            #expect(try await queue.claim(limit: 10, kinds: ["a"], worker: "w2", lease: .seconds(30)).isEmpty)
            let row = try await db.job(a)
            #expect(row.state == "running" && row.attempt == 1 && row.lockedBy == "w1")
        }
    }

    @Test("a failed attempt is kept on the row and the job waits out its backoff")
    func failBacksOff() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = JobQueue(pool: db.pool, deadLetters: .queueTests, retryPolicy: .init(base: .seconds(10), maximum: .seconds(60), jitter: 0.5),
                                 unitRandom: { 0.5 })
            let id = try #require(try await queue.enqueue(kind: "a", maxAttempts: 3))
            let job = try #require(try await queue.claim(limit: 1, kinds: ["a"], worker: "w", lease: .seconds(30)).first)
            #expect(try await queue.fail(job, error: "provider said 503\u{0}") == .retryable)
            let row = try await db.job(id)
            #expect(row.state == "retryable")
            #expect(row.errors.map(\.attempt) == [1])
            #expect(row.errors.first?.error == "provider said 503\u{FFFD}")
            // Measured from the failing statement's own clock (the error entry's `at`), not from
            // a later now(): on a loaded machine the next query may run seconds later.
            let wait = try await db.pool.query(
                "SELECT extract(epoch FROM run_at - (errors -> -1 ->> 'at')::timestamptz)::float8 AS s FROM jobs WHERE id = $1",
                [.int(id)]).rows.first?.decode("s", as: Double.self)
            // 10 s · (1 - 0.5 + 0.5 · 0.5) = 7.5 s
            #expect(abs(try #require(wait) - 7.5) < 0.01)
            #expect(try await queue.claim(limit: 1, kinds: ["a"], worker: "w", lease: .seconds(30)).isEmpty)
        }
    }

    @Test("a heartbeat extends the lease of a held job only")
    func heartbeat() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            _ = try await queue.enqueue(kind: "a")
            let job = try #require(try await queue.claim(limit: 1, kinds: ["a"], worker: "w", lease: .seconds(5)).first)
            #expect(try await queue.extendLeases([job], lease: .seconds(3600)) == [job.id])
            let far = try await db.count("lease_expires_at > now() + interval '3000 seconds'")
            #expect(far == 1)
            let impostor = Job(id: job.id, kind: job.kind, payload: job.payload, uniqueKey: nil, attempt: job.attempt,
                               maxAttempts: job.maxAttempts, worker: "someone-else", runAt: job.runAt,
                               createdAt: job.createdAt, leaseExpiresAt: job.leaseExpiresAt)
            #expect(try await queue.extendLeases([impostor], lease: .seconds(1)).isEmpty)
        }
    }

    @Test("a stale worker cannot finish a job that was rescued and claimed by another")
    func staleWorker() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let rescuer = JobRescuer(queue: queue)
            let id = try #require(try await queue.enqueue(kind: "a"))
            let stale = try #require(try await queue.claim(limit: 1, kinds: ["a"], worker: "w1", lease: .milliseconds(50)).first)
            #expect(await eventually { (try? await rescuer.rescueExpired()) == 1 })
            let fresh = try #require(try await queue.claim(limit: 1, kinds: ["a"], worker: "w2", lease: .seconds(30)).first)
            #expect(fresh.id == id && fresh.attempt == 2)

            #expect(try await queue.complete(stale) == false)
            #expect(try await queue.fail(stale, error: "late") == nil)
            #expect(try await queue.snooze(stale, for: .zero) == false)
            #expect(try await queue.discard(stale, reason: .discardedByHandler, message: "late") == false)
            #expect(try await queue.release([stale]).isEmpty)
            #expect(try await queue.extendLeases([stale], lease: .seconds(60)).isEmpty)
            // Same worker name claiming again does not revive an old attempt either.
            let sameName = Job(id: id, kind: "a", payload: "{}", uniqueKey: nil, attempt: 1, maxAttempts: 25, worker: "w2",
                               runAt: fresh.runAt, createdAt: fresh.createdAt, leaseExpiresAt: fresh.leaseExpiresAt)
            #expect(try await queue.complete(sameName) == false)
            #expect(try await db.job(id).state == "running")

            #expect(try await queue.complete(fresh))
            let row = try await db.job(id)
            #expect(row.state == "succeeded" && row.attempt == 2)
            #expect(row.errors.count == 1 && row.errors[0].error.contains("lease expired") && row.errors[0].attempt == 1)
        }
    }

    @Test("a discard's letter takes its reason from the outcome, never from the message's text")
    func discardReason() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let coded = try #require(try await queue.enqueue(kind: "a", payload: #"{"provider": "adyen"}"#))
            let plain = try #require(try await queue.enqueue(kind: "a"))
            let jobs = try await queue.claim(limit: 2, kinds: ["a"], worker: "w1", lease: .seconds(30))
            let codedJob = try #require(jobs.first { $0.id == coded })
            let plainJob = try #require(jobs.first { $0.id == plain })
            #expect(try await queue.record(.discard(.fulfillmentMismatch, message: "amount differs"), for: codedJob))
            // Text that reads like a code stays text: the reason is the one the handler named.
            #expect(try await queue.record(.discard(.discardedByHandler, message: "not_found: looks like a code"), for: plainJob))

            #expect(try await db.job(coded).errors.map(\.error) == ["fulfillment_mismatch: amount differs"])
            let codedLetters = try await db.deadLetters(job: coded)
            #expect(codedLetters.map(\.reason) == ["fulfillment_mismatch"])
            #expect(codedLetters.first?.error == "fulfillment_mismatch: amount differs")
            let provider = try await db.pool.query("SELECT provider FROM dead_letters WHERE source_id = $1", [.int(coded)])
            #expect(try provider.rows.first?.decode("provider", as: String?.self) == "adyen")
            let plainLetters = try await db.deadLetters(job: plain)
            #expect(plainLetters.map(\.reason) == ["discarded_by_handler"])
            #expect(plainLetters.first?.error == "not_found: looks like a code")
        }
    }

    @Test("dead-letter reasons are the codes operators already filter on")
    func reasonCodes() {
        #expect(Set(DeadLetterReason.allCases.map(\.rawValue)) == [
            "max_attempts_exceeded", "payload_invalid", "not_found_at_provider", "unsupported_at_provider", "unknown_provider",
            "discarded_by_handler", "not_found", "fulfillment_mismatch", "callback_url_refused", "merchant_gone",
            "invalid_amount", "unsupported", "still_pending", "charge_outcome_unknown", "duplicate_success",
        ])
        #expect(JobOutcome.discard(.notFound, message: "no order 4").recordedError == "not_found: no order 4")
        #expect(JobOutcome.discard(.discardedByHandler, message: "gave up").recordedError == "gave up")
        #expect(JobOutcome.retry(error: "later").recordedError == "later")
        #expect(JobOutcome.succeeded.recordedError == nil)
    }

    @Test("a wake by unique key makes waiting jobs of that kind due now and leaves every other job as it is")
    func wakeByKey() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let later = Date().addingTimeInterval(3600)
            let waiting = try #require(try await queue.enqueue(kind: "a", uniqueKey: "a:1", runAt: later))
            let otherKind = try #require(try await queue.enqueue(kind: "b", uniqueKey: "b:1", runAt: later))
            let otherKey = try #require(try await queue.enqueue(kind: "a", uniqueKey: "a:2", runAt: later))
            let held = try #require(try await queue.enqueue(kind: "a", uniqueKey: "a:3"))
            _ = try await queue.claim(limit: 1, kinds: ["a"], worker: "w1", lease: .seconds(30))
            // A failed attempt waits out its backoff as `retryable`.
            let retried = try #require(try await queue.enqueue(kind: "c", uniqueKey: "c:1"))
            let failing = try #require(try await queue.claim(limit: 1, kinds: ["c"], worker: "w1", lease: .seconds(30)).first)
            #expect(try await db.queue(retryPolicy: .init(base: .seconds(3600), maximum: .seconds(3600), jitter: 0))
                .fail(failing, error: "later") == .retryable)

            let woken = try await db.pool.transaction { connection in
                try await JobQueue.wake(kind: "a", uniqueKeys: ["a:1", "a:3", "b:1", "missing"], on: connection)
                    + JobQueue.wake(kind: "c", uniqueKeys: ["c:1"], on: connection)
            }
            #expect(Set(woken) == [waiting, retried])
            let due = try await queue.claim(limit: 10, kinds: ["a", "b", "c"], worker: "w2", lease: .seconds(30))
            #expect(Set(due.map(\.id)) == [waiting, retried])
            #expect(due.first { $0.id == retried }?.attempt == 2)
            let heldRow = try await db.job(held)
            #expect(heldRow.state == "running" && heldRow.lockedBy == "w1")
            #expect(try await db.job(otherKind).state == "available")
            #expect(try await db.job(otherKey).state == "available")
            let none = try await db.pool.transaction { connection in
                try await JobQueue.wake(kind: "a", uniqueKeys: [], on: connection)
            }
            #expect(none.isEmpty)
        }
    }

    @Test("a requeue by unique key takes only the asked states, gives a discarded job its attempts back, and never takes a running or finished job")
    func requeueByKey() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let discarded = try #require(try await queue.enqueue(kind: "a", uniqueKey: "k1", maxAttempts: 3))
            let running = try #require(try await queue.enqueue(kind: "a", uniqueKey: "k2"))
            let snoozed = try #require(try await queue.enqueue(kind: "a", uniqueKey: "k3"))
            let done = try #require(try await queue.enqueue(kind: "a", uniqueKey: "k4"))
            let claimed = try await queue.claim(limit: 4, kinds: ["a"], worker: "w1", lease: .seconds(30))
            let job = { (id: Int64) in claimed.first { $0.id == id }! }
            #expect(try await queue.record(.discard(.notFound, message: "gone"), for: job(discarded)))
            #expect(try await queue.snooze(job(snoozed), for: .seconds(3600)))
            #expect(try await queue.complete(job(done)))

            let onlyDiscarded = try await db.pool.transaction { connection in
                try await JobQueue.requeue(kind: "a", uniqueKeys: ["k1", "k2", "k3", "k4"], from: [.discarded], on: connection)
            }
            #expect(onlyDiscarded == [discarded])
            let row = try await db.job(discarded)
            #expect(row.state == "available" && row.attempt == 0 && row.errors.map(\.error) == ["not_found: gone"])
            // The letter is the caller's to resolve.
            #expect(try await db.deadLetters(job: discarded).map(\.status) == ["open"])

            let rest = try await db.pool.transaction { connection in
                try await JobQueue.requeue(kind: "a", uniqueKeys: ["k2", "k3", "k4"], from: Set(JobState.allCases), on: connection)
            }
            #expect(rest == [snoozed])
            #expect(try await db.job(snoozed).attempt == 0)
            #expect(try await db.job(running).state == "running")
            #expect(try await db.job(done).state == "succeeded")
            let due = try await queue.claim(limit: 10, kinds: ["a"], worker: "w2", lease: .seconds(30))
            #expect(Set(due.map(\.id)) == [discarded, snoozed])
        }
    }

    @Test("an operator's requeue by id restarts a discarded or retryable job from attempt zero and nothing else")
    func requeueByID() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue(retryPolicy: .init(base: .seconds(3600), maximum: .seconds(3600), jitter: 0))
            let discarded = try #require(try await queue.enqueue(kind: "a", maxAttempts: 1))
            let retryable = try #require(try await queue.enqueue(kind: "a", maxAttempts: 5))
            let running = try #require(try await queue.enqueue(kind: "a"))
            let claimed = try await queue.claim(limit: 3, kinds: ["a"], worker: "w1", lease: .seconds(30))
            for job in claimed where job.id != running { _ = try await queue.fail(job, error: "boom") }
            #expect(try await db.job(discarded).state == "discarded")
            #expect(try await db.job(retryable).state == "retryable")

            let results = try await db.pool.transaction { connection in
                [try await JobQueue.requeue(id: discarded, on: connection), try await JobQueue.requeue(id: retryable, on: connection),
                 try await JobQueue.requeue(id: running, on: connection), try await JobQueue.requeue(id: 999_999, on: connection)]
            }
            #expect(results == [true, true, false, false])
            for id in [discarded, retryable] {
                let row = try await db.job(id)
                #expect(row.state == "available" && row.attempt == 0 && row.lockedBy == nil && row.errors.count == 1)
            }
            #expect(try await db.job(running).state == "running")
            let due = try await queue.claim(limit: 10, kinds: ["a"], worker: "w2", lease: .seconds(30))
            #expect(Set(due.map(\.id)) == [discarded, retryable])
        }
    }

    @Test("the rescuer discards and dead-letters an expired job that was on its last attempt")
    func rescueLastAttempt() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let id = try #require(try await queue.enqueue(kind: "a", maxAttempts: 1))
            _ = try await queue.claim(limit: 1, kinds: ["a"], worker: "w1", lease: .milliseconds(50))
            #expect(await eventually { (try? await JobRescuer(queue: queue).rescueExpired()) == 1 })
            #expect(try await db.job(id).state == "discarded")
            let letters = try await db.deadLetters(job: id)
            #expect(letters.map(\.reason) == ["max_attempts_exceeded"])
            #expect(letters.first?.error?.contains("w1") == true)
        }
    }
}
