import Synchronization

/// Combines concurrent calls into batches without a background task: a caller arriving while
/// no flush runs (or, while fewer than `maxFlushes` run, with `minConcurrentBatch` inputs ready
/// counting its own) becomes a leader and flushes its own input together with everything that
/// queued up meanwhile; other callers wait, and a leader that is done hands its slot to the
/// oldest of them, whose flush takes the waiters.
///
/// Why: one statement (one round trip, one commit) for many concurrent callers, where a
/// statement per caller would make the database's per-statement cost the limit. With no
/// caller waiting a call is flushed alone, at once: batching costs no latency when idle.
///
/// Why more than one flush at a time: a flush is mostly waiting (a round trip, a commit's
/// fsync); with one slot, every caller would wait for the flush before its own, and the
/// database's group commit would get one transaction to share its fsync with.
///
/// `flush` gets the leader's input first, then the waiters' in submission order, and must
/// return exactly one output per input, in the same order. It runs on the leader's task, at most `maxFlushes` at a time.
///
/// Threading: `submit` may be called from any task.
public final class BatchCombiner<Input: Sendable, Output: Sendable>: Sendable {
    private enum Step: Sendable {
        case lead
        case done(Output)
    }

    private struct Waiter: Sendable {
        let input: Input
        let continuation: CheckedContinuation<Step, Never>
    }

    private struct State: Sendable {
        var flushing = 0
        var waiting: [Waiter] = []
    }

    private let maxBatch: Int
    private let maxFlushes: Int
    private let minConcurrentBatch: Int
    private let flush: @Sendable ([Input]) async -> [Output]
    private let state = Mutex(State())

    /// - Parameters:
    ///   - maxBatch: most inputs in one flush; the rest wait for the next.
    ///   - maxFlushes: most flushes running at once.
    ///   - minConcurrentBatch: inputs (waiting ones and the caller's) it takes to start a flush
    ///     beside a running one; below it, callers wait for a running flush to finish. 1 starts
    ///     one whenever a slot is free.
    ///   - flush: runs one batch; one output per input, in order.
    public init(maxBatch: Int, maxFlushes: Int = 1, minConcurrentBatch: Int = 1,
                flush: @escaping @Sendable ([Input]) async -> [Output]) {
        self.maxBatch = max(1, maxBatch)
        self.maxFlushes = max(1, maxFlushes)
        self.minConcurrentBatch = max(1, minConcurrentBatch)
        self.flush = flush
    }

    /// Callers waiting for a flush (for tests).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Submits one input and returns its output once its batch has been flushed.
    public func submit(_ input: Input) async -> Output {
        let step: Step = await withCheckedContinuation { continuation in
            let leadNow = state.withLock { state in
                let startsFlush = state.flushing == 0
                    || (state.flushing < maxFlushes && state.waiting.count + 1 >= minConcurrentBatch)
                guard startsFlush else {
                    state.waiting.append(Waiter(input: input, continuation: continuation))
                    return false
                }
                state.flushing += 1
                return true
            }
            if leadNow { continuation.resume(returning: .lead) }
        }
        switch step {
        case .done(let output):
            return output
        case .lead:
            return await lead(with: input)
        }
    }

    /// Flushes `own` with up to `maxBatch - 1` waiters, answers them, then passes the lead on.
    private func lead(with own: Input) async -> Output {
        let followers: [Waiter] = state.withLock { state in
            let count = min(state.waiting.count, maxBatch - 1)
            defer { state.waiting.removeFirst(count) }
            return Array(state.waiting.prefix(count))
        }
        let outputs = await flush([own] + followers.map(\.input))
        precondition(outputs.count == followers.count + 1, "BatchCombiner flush must return one output per input")
        for (index, follower) in followers.enumerated() {
            follower.continuation.resume(returning: .done(outputs[index + 1]))
        }
        let next: Waiter? = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.flushing -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        // The next leader's input travels with its own task; it flushes it with the rest.
        next?.continuation.resume(returning: .lead)
        return outputs[0]
    }
}
