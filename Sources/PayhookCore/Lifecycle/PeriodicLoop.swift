import Synchronization

/// The one periodic ticker: runs a body now (or after one interval) and then every `interval`
/// until `stop()`, which also cuts a pause short so that shutdown never waits out an interval.
/// Cancelling the task that runs it stops it the same way.
///
/// Graceful by design: `stop()` lets a body that is running finish (a retention batch commits or
/// rolls back on its own); only the pause between runs is interrupted. The interval is the pause
/// after a body returns, so a slow round never makes the next one start at once.
///
/// ```swift
/// // Not a hand-rolled `while !stopped { work(); try? await Task.sleep(for: interval) }`,
/// // whose stop waits out the sleep:
/// let loop = PeriodicLoop()
/// await loop.run(every: .seconds(30)) { await refreshGauges() }   // elsewhere: loop.stop()
/// ```
public final class PeriodicLoop: Sendable {
    /// When the first round runs.
    public enum FirstRound: Sendable {
        /// As `run` starts.
        case immediately
        /// One interval after `run` starts (a heartbeat: nothing to renew at start).
        case afterInterval
    }

    private struct State {
        var stopped = false
        var generation = 0
        var waiter: CheckedContinuation<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Calls `body` until `stop()` or the calling task is cancelled; returns after the last
    /// call finished.
    public func run(every interval: Duration, first: FirstRound = .immediately,
                    _ body: @Sendable () async -> Void) async {
        await withTaskCancellationHandler {
            if first == .afterInterval { await pause(interval) }
            while !state.withLock({ $0.stopped }) {
                await body()
                await pause(interval)
            }
        } onCancel: {
            stop()
        }
    }

    /// Ends `run` after the body in progress, if any.
    public func stop() {
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
