import PayhookCore
import PayhookQueue
import Testing

/// The worker's own retry loops wait by named `RetryPolicy` values; these pin their delays.
@Suite("Job worker backoff")
struct JobWorkerBackoffTests {
    /// The delays of `policy` after failures 1…`count`, in whole milliseconds.
    private func milliseconds(_ policy: RetryPolicy, count: Int) -> [Int] {
        (1...count).map { Int((policy.delay(afterAttempt: $0, unitRandom: 0) / .milliseconds(1)).rounded()) }
    }

    @Test("a failed claim pauses 100 ms, doubling to 5 s, without jitter")
    func claimFailure() {
        #expect(milliseconds(JobWorker.claimFailureBackoff, count: 9) == [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000])
        #expect(JobWorker.claimFailureBackoff.delay(afterAttempt: 1000, unitRandom: 0) == .seconds(5))
    }

    @Test("a recording statement is tried six times with 100 ms to 1.6 s between, 3.1 s in all")
    func recording() {
        #expect(JobWorker.recordingTries == 6)
        let pauses = milliseconds(JobWorker.recordingBackoff, count: JobWorker.recordingTries - 1)
        #expect(pauses == [100, 200, 400, 800, 1600])
        #expect(pauses.reduce(0, +) == 3100)
    }
}
