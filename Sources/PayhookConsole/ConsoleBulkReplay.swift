import Foundation
import PayhookAdmin
import PayhookCore
import PayhookOperations
import PayhookProcessing
import PayhookSubscriptions
import Synchronization

/// Replays a filtered selection of dead letters from the console, throttled like
/// `payhook dead-letters replay --all --rate`, one audited `DeadLetterOperations.replay` per letter.
///
/// It runs in the background (a large selection at a gentle rate outlasts any HTTP request), one
/// at a time per process, owned here: as a `Service`, shutdown's first phase (`stopIntake()`)
/// cancels it, and `run()` returns once the letter in progress is done. Stopping part-way is
/// safe: the letters not reached stay open, and replaying is idempotent.
package final class ConsoleBulkReplay: Service {
    /// Letters per second when the form leaves the rate alone.
    static let defaultRate = 10.0
    /// The CLI's default rate, as a ceiling: this runs inside a process that also serves, and
    /// every replayed delivery or job lands on the same processors and workers.
    static let maxRate = 50.0

    struct Progress: Sendable {
        let total: Int
        var done: Int
        var failed: Int
        var running: Bool
        let actor: String
    }

    private let state = Mutex<(task: Task<Void, Never>?, progress: Progress?)>((nil, nil))

    /// The current or last run in this process.
    var progress: Progress? { state.withLock { $0.progress } }

    /// Starts replaying `ids` in order; false (and nothing started) while another run is going.
    func start(ids: [Int64], rate: Double, action: OperatorAction, operations: DeadLetterOperations) -> Bool {
        state.withLock { current in
            if current.progress?.running == true { return false }
            current.progress = Progress(total: ids.count, done: 0, failed: 0, running: true, actor: action.actor)
            current.task = Task { [self] in
                let clock = ContinuousClock()
                let start = clock.now
                for (index, id) in ids.enumerated() {
                    if Task.isCancelled { break }
                    try? await clock.sleep(until: start + .seconds(Double(index) / rate))
                    let succeeded: Bool
                    do {
                        _ = try await operations.replay(id: id, by: action)
                        succeeded = true
                    } catch {
                        succeeded = false
                    }
                    state.withLock { $0.progress?.done += 1; if !succeeded { $0.progress?.failed += 1 } }
                }
                state.withLock { $0.progress?.running = false }
            }
            return true
        }
    }

    private let stopped = StopSignal()

    package var serviceName: String { "console bulk replay" }

    /// Waits for `stop()`, then for the run in progress (cancelled by `stopIntake()`).
    package func run() async {
        await stopped.wait()
        await state.withLock { $0.task }?.value
    }

    package func stopIntake() {
        state.withLock { $0.task }?.cancel()
    }

    package func stop() {
        stopIntake()
        stopped.fire()
    }
}
