import Synchronization

/// Runs a body now and then every `interval` until `stop()`, which also cuts a pause short so
/// that shutdown never waits out an interval.
///
/// Graceful by design: `stop()` lets a body that is running finish (a retention batch commits or
/// rolls back on its own); only the pause between runs is interrupted.
package final class PeriodicLoop: Sendable {
    private struct State {
        var stopped = false
        var generation = 0
        var waiter: CheckedContinuation<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())

    package init() {}

    /// Calls `body` until `stop()`; returns after the last call finished.
    package func run(every interval: Duration, _ body: @Sendable () async -> Void) async {
        while !state.withLock({ $0.stopped }) {
            await body()
            await pause(interval)
        }
    }

    /// Ends `run` after the body in progress, if any.
    package func stop() {
        let (waiter, timer) = state.withLock { state in
            state.stopped = true
            defer { state.waiter = nil; state.timer = nil }
            return (state.waiter, state.timer)
        }
        timer?.cancel()
        waiter?.resume()
    }

    private func pause(_ interval: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation: Int? = state.withLock { state in
                if state.stopped { return nil }
                state.generation += 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume() }
            let timer = Task { [weak self] in
                try? await Task.sleep(for: interval)
                self?.wake(generation)
            }
            state.withLock { state in
                if state.generation == generation, state.waiter != nil { state.timer = timer } else { timer.cancel() }
            }
        }
    }

    /// Resumes the pause of `generation` if it is still the current one.
    private func wake(_ generation: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.generation == generation else { return nil }
            defer { state.waiter = nil; state.timer = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
