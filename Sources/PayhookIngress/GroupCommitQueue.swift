import Synchronization

/// Collects items submitted from many threads and hands them to a flush function in batches.
///
/// This is what makes ingress group-commit: while one batch is being written, new deliveries
/// queue up, and the next flush takes all of them in one statement, so throughput is not bounded
/// by one fsync per request. Several `runWorker()` loops may drain the same queue concurrently.
/// The queue is bounded: `submit` refuses work beyond `capacity` so that a slow database turns
/// into fast 503s rather than unbounded memory.
package final class GroupCommitQueue<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        var stopped = false
        /// Flushes running now.
        var flushing = 0

        func mayStartFlush(minConcurrentBatch: Int) -> Bool {
            GroupCommitQueue.mayStartFlush(
                queued: items.count, flushing: flushing, stopped: stopped, minConcurrentBatch: minConcurrentBatch)
        }
    }

    private let state = Mutex(State())
    private let maxBatch: Int
    private let capacity: Int
    private let minConcurrentBatch: Int
    private let flush: @Sendable ([Item]) async -> Void

    /// - Parameters:
    ///   - maxBatch: the most items one flush takes.
    ///   - capacity: the most items waiting; `submit` refuses beyond it.
    ///   - minConcurrentBatch: items that must wait before a flush starts beside a running one;
    ///     1 lets every worker flush as soon as anything arrives.
    init(maxBatch: Int, capacity: Int, minConcurrentBatch: Int = 1, flush: @escaping @Sendable ([Item]) async -> Void) {
        self.maxBatch = maxBatch
        self.capacity = capacity
        self.minConcurrentBatch = max(1, minConcurrentBatch)
        self.flush = flush
    }

    /// Whether a worker may take a batch: something is queued, and either no flush runs, or
    /// enough waits to be worth a concurrent one, or the queue is draining after `stop()`.
    static func mayStartFlush(queued: Int, flushing: Int, stopped: Bool, minConcurrentBatch: Int) -> Bool {
        queued > 0 && (flushing == 0 || queued >= minConcurrentBatch || stopped)
    }

    /// Queues an item; returns false (item not taken) when the queue is full or stopped.
    func submit(_ item: Item) -> Bool {
        let waiter: CheckedContinuation<Void, Never>?
        let accepted: Bool
        (accepted, waiter) = state.withLock { state in
            guard !state.stopped, state.items.count < capacity else { return (false, nil) }
            state.items.append(item)
            // A waiter that could not start a flush yet stays asleep; the running flush's
            // worker takes the item when it finishes.
            guard !state.waiters.isEmpty, state.mayStartFlush(minConcurrentBatch: minConcurrentBatch) else { return (true, nil) }
            return (true, state.waiters.removeFirst())
        }
        waiter?.resume()
        return accepted
    }

    /// Number of items waiting for a flush.
    var depth: Int { state.withLock { $0.items.count } }

    /// Drains batches until `stop()` has been called and nothing is left.
    func runWorker() async {
        while true {
            let batch = await nextBatch()
            if batch.isEmpty { return }
            await flush(batch)
            state.withLock { $0.flushing -= 1 }
        }
    }

    /// Refuses new items; workers finish what is queued, then return.
    func stop() {
        let waiters = state.withLock { state in
            state.stopped = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func nextBatch() async -> [Item] {
        while true {
            let immediate: [Item]? = state.withLock { state in
                if state.mayStartFlush(minConcurrentBatch: minConcurrentBatch) {
                    state.flushing += 1
                    guard state.items.count > maxBatch else {
                        // The usual case: take the whole queue without copying its items, and
                        // give the queue a buffer the size of this batch for the next one.
                        var batch: [Item] = []
                        batch.reserveCapacity(state.items.count)
                        swap(&batch, &state.items)
                        return batch
                    }
                    let batch = Array(state.items.prefix(maxBatch))
                    state.items.removeFirst(maxBatch)
                    return batch
                }
                return state.stopped && state.items.isEmpty ? [] : nil
            }
            if let immediate { return immediate }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.mayStartFlush(minConcurrentBatch: minConcurrentBatch) || state.stopped { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }
}
