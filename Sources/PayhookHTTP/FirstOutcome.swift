import Synchronization

/// One call's outcome, decided once by whichever finishes first (the response, the deadline,
/// a cancellation, a shutdown); later answers are dropped. The caller parks on `install` until
/// then, or is answered at once when the outcome came first.
///
/// Threading: every method may be called from any thread.
final class FirstOutcome<Outcome: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var outcome: Outcome?
    }

    private let state = Mutex(State())

    /// Whether the outcome is decided.
    var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Parks the caller; if the outcome is already decided, resumes it at once.
    func install(_ continuation: CheckedContinuation<Outcome, Never>) {
        let early: Outcome? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Decides the outcome; only the first call counts.
    /// - Returns: true when this call decided it.
    @discardableResult
    func finish(_ outcome: Outcome) -> Bool {
        let (won, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Outcome, Never>?) in
            guard state.outcome == nil else { return (false, nil) }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (true, state.continuation)
        }
        continuation?.resume(returning: outcome)
        return won
    }
}
