import Synchronization

/// The claim a worker holds on the job a handler is running, as this process sees it: until
/// when it is good (renewed by each heartbeat), and whether the database still says it is ours.
///
/// Why handlers need it: a worker whose heartbeats fail (a partition, a stalled process) loses
/// the job when the lease expires, and another worker may then run it. A handler calling a
/// provider must not start a call once the lease is gone, nor still be in one when another
/// worker can start its own with the same idempotency key. ``whileHeld(_:)`` enforces both: it
/// refuses to start after the lease is lost or about to end, and cancels the call `margin`
/// before the lease ends on this process's clock (which runs from before the claim, so it ends
/// no later than the database's `lease_expires_at`), or at once when a heartbeat finds the
/// job taken.
///
/// ```swift
/// let result = try await JobLease.current?.whileHeld { try await client.charge(…) }
///     ?? client.charge(…)   // no lease: a handler run outside a worker (tests)
/// ```
///
/// Threading: safe from any task; state under a `Mutex`.
public final class JobLease: Sendable {
    /// The lease of the job the current task runs, set by `JobWorker` around each handler.
    @TaskLocal public static var current: JobLease?

    private struct State {
        var expiresAt: ContinuousClock.Instant
        var lost = false
        var nextID = 0
        var running: [Int: @Sendable () -> Void] = [:]
    }

    /// How long before the lease ends a call is cancelled (and a new one refused).
    public let margin: Duration
    private let state: Mutex<State>

    /// - Parameters:
    ///   - expiresAt: the claim's start on this process's clock plus the lease.
    ///   - margin: safety before the end, for clock steps and the cancellation itself.
    public init(expiresAt: ContinuousClock.Instant, margin: Duration) {
        self.margin = margin
        state = Mutex(State(expiresAt: expiresAt))
    }

    /// Whether a call may start now.
    public var isHeld: Bool {
        state.withLock { !$0.lost && ContinuousClock.now < $0.expiresAt - margin }
    }

    /// A heartbeat renewed the claim until `expiresAt`.
    public func renew(until expiresAt: ContinuousClock.Instant) {
        state.withLock { state in
            if !state.lost, expiresAt > state.expiresAt { state.expiresAt = expiresAt }
        }
    }

    /// The job is no longer ours (a heartbeat found it taken, or the worker released it):
    /// calls in flight are cancelled at once and no new one starts.
    public func lose() {
        let cancels = state.withLock { state in
            state.lost = true
            defer { state.running = [:] }
            return Array(state.running.values)
        }
        for cancel in cancels { cancel() }
    }

    /// Runs `operation` while the lease holds.
    /// - Throws: ``JobLeaseExpired`` without running it when the lease is lost or about to end;
    ///   otherwise whatever `operation` throws, which, when the lease ended meanwhile, is the
    ///   error of a cancelled operation (the outcome of a cancelled provider call is unknown).
    public func whileHeld<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        guard isHeld else { throw JobLeaseExpired() }
        let task = Task { try await operation() }
        let id: Int? = state.withLock { state in
            guard !state.lost else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.running[id] = { task.cancel() }
            return id
        }
        guard let id else {
            task.cancel()
            _ = try? await task.value
            throw JobLeaseExpired()
        }
        let watchdog = Task {
            while !Task.isCancelled {
                let deadline = state.withLock { $0.expiresAt } - margin
                if ContinuousClock.now >= deadline {
                    task.cancel()
                    return
                }
                // Renewals move the deadline: look again at least every second.
                try? await Task.sleep(until: min(deadline, .now + .seconds(1)), clock: .continuous)
            }
        }
        defer {
            watchdog.cancel()
            _ = state.withLock { $0.running.removeValue(forKey: id) }
        }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }
}

/// A call was not started because the job's lease is lost or about to end.
public struct JobLeaseExpired: Error, Sendable, CustomStringConvertible {
    public init() {}
    public var description: String { "the job's lease is lost or about to end; not started" }
}
