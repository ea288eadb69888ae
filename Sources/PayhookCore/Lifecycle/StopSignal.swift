import Synchronization

/// A one-way latch: ``wait()`` returns once ``fire()`` has been called, at once if it already was.
///
/// What a ``Service`` whose work runs elsewhere (a listener's threads, a pool's connections)
/// awaits in `run()`, so that `run()` returns only after `stop()`.
public final class StopSignal: Sendable {
    private struct State {
        var fired = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether ``fire()`` has been called.
    public var isFired: Bool { state.withLock { $0.fired } }

    /// Releases every waiter, present and future. Idempotent.
    public func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``fire()`` has been called.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let firedAlready = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if firedAlready { continuation.resume() }
        }
    }
}
