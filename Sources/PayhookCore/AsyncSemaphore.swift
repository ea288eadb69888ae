import Synchronization

/// Counts permits for async callers; waiting is suspension, not blocking, and cancellable.
/// Waiters get permits in arrival order.
public final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        var nextWaiterID: UInt64 = 0
        /// FIFO; a cancelled waiter is removed and resumed with `false`.
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    private let state: Mutex<State>

    public init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    /// Takes a permit, waiting if none is free. Returns false if the task was cancelled
    /// (then no permit is held).
    public func acquire() async -> Bool {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let granted: Bool? = state.withLock { state in
                    // Checked under the lock: a cancellation that ran its handler before this
                    // waiter was listed is seen here instead.
                    if Task.isCancelled { return false }
                    if state.permits > 0 {
                        state.permits -= 1
                        return true
                    }
                    state.waiters.append((id: id, continuation: continuation))
                    return nil
                }
                if let granted { continuation.resume(returning: granted) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            cancelled?.resume(returning: false)
        }
    }

    /// Takes a permit if one is free right now, without suspending.
    public func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.permits > 0 else { return false }
            state.permits -= 1
            return true
        }
    }

    /// How `acquire(until:)` ended; only `.acquired` holds a permit.
    public enum Acquisition: Sendable, Equatable {
        case acquired
        case cancelled
        case timedOut
    }

    /// Takes a permit, waiting at most until `deadline`. Free permits are taken without
    /// suspending; only a wait races a timer (a child task), so the uncontended path costs
    /// nothing extra.
    public func acquire(until deadline: ContinuousClock.Instant) async -> Acquisition {
        if tryAcquire() { return .acquired }
        if Task.isCancelled { return .cancelled }
        return await withTaskGroup(of: Acquisition.self) { group in
            group.addTask { await self.acquire() ? .acquired : .cancelled }
            group.addTask {
                do {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    return .timedOut
                } catch {
                    return .cancelled
                }
            }
            let first = await group.next() ?? .cancelled
            group.cancelAll()
            var lateAcquisition = false
            for await other in group where other == .acquired { lateAcquisition = true }
            if first == .acquired { return .acquired }
            // The permit arrived just after the timer or the cancellation won: give it back.
            if lateAcquisition { release() }
            return first
        }
    }

    /// Returns a permit, handing it straight to the longest waiter if there is one.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.waiters.isEmpty {
                state.permits += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume(returning: true)
    }
}
