import PayhookCore
import Synchronization
import Testing

@Suite("PeriodicLoop", .timeLimit(.minutes(1)))
struct PeriodicLoopTests {
    /// Far longer than the time limit: a loop that returns did not wait out a pause.
    static let hour = Duration.seconds(3600)

    @Test("cancelling the task that runs a loop ends it mid-pause, after the first round")
    func cancellationEndsTheLoop() async {
        let rounds = Atomic<Int>(0)
        let started = StopSignal()
        let task = Task {
            await PeriodicLoop().run(every: Self.hour) {
                rounds.add(1, ordering: .sequentiallyConsistent)
                started.fire()
            }
        }
        await started.wait()
        task.cancel()
        await task.value
        #expect(rounds.load(ordering: .sequentiallyConsistent) == 1)
    }

    @Test("a loop whose first round comes after an interval runs no round when stopped before it")
    func firstRoundAfterInterval() async {
        let rounds = Atomic<Int>(0)
        let loop = PeriodicLoop()
        let task = Task {
            await loop.run(every: Self.hour, first: .afterInterval) { rounds.add(1, ordering: .sequentiallyConsistent) }
        }
        loop.stop()
        await task.value
        #expect(rounds.load(ordering: .sequentiallyConsistent) == 0)
    }

    @Test("a stop signal releases waiters present and future")
    func stopSignal() async {
        let signal = StopSignal()
        let waiter = Task { await signal.wait() }
        #expect(!signal.isFired)
        signal.fire()
        await waiter.value
        await signal.wait()
        #expect(signal.isFired)
    }
}
