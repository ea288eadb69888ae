import Dispatch
import Foundation
import PayhookCore
import Synchronization

/// Counts for metrics: `open` = `idle` + `inUse` (in use includes connections being opened).
public struct PostgresPoolStatistics: Sendable, Hashable {
    /// Connections that exist or are being opened.
    public let open: Int
    /// Open connections waiting in the pool.
    public let idle: Int
    /// Connections checked out (or being opened for a caller).
    public let inUse: Int
    /// Callers queued for a connection.
    public let waiting: Int

    /// Creates statistics; public so metric code can be tested with fixed figures.
    public init(open: Int, idle: Int, inUse: Int, waiting: Int) {
        self.open = open
        self.idle = idle
        self.inUse = inUse
        self.waiting = waiting
    }
}

/// A bounded set of connections shared by many tasks.
///
/// Why: a connection is one server process; the pool caps them at `maxConnections` and queues
/// further callers first-in, first-out for at most `acquireTimeout`.
///
/// A connection found broken (dead socket, `.connectionLost`, failed ROLLBACK) or returned
/// inside a transaction is discarded, and the next checkout connects anew; idle connections
/// are checked for a dead socket at checkout. That is how a pool survives a server restart
/// without being recreated: calls fail with a retryable error while the server is down, then
/// succeed.
///
/// Threading: all methods may be called from any task. Bookkeeping is under a `Mutex`; libpq
/// work happens on each connection's own queue.
public final class PostgresPool: Sendable {
    private let conninfo: String
    /// How the pool's connections treat their server sessions (`PAYHOOK_DATABASE_POOLING`).
    public let pooling: PostgresPooling
    private let maxConnections: Int
    private let acquireTimeout: Duration
    private let callDeadline: Duration?
    private let state = Mutex(State())
    /// Fired by `stop()` (the `Service` face): `run()` then closes the pool.
    let closeRequested = StopSignal()
    /// Fires acquire timeouts; a DispatchQueue timer needs no task to own and cancel it.
    private static let timerQueue = DispatchQueue(label: "payhook.postgres.pool.timers")

    /// What a waiter is handed: a connection, or the right to open one (a free slot).
    private enum Lease: Sendable {
        case connection(PostgresConnection)
        case slot
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Result<Lease, PostgresError>, Never>
    }

    private struct State {
        var open = 0
        var idle: [PostgresConnection] = []
        var waiters: [Waiter] = []  // FIFO
        var cancelledBeforeQueued: Set<UInt64> = []
        var nextWaiterID: UInt64 = 0
        var closed = false
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    /// Creates a pool; no connection is opened until the first checkout.
    /// - Parameters:
    ///   - conninfo: libpq URI or `key=value` string.
    ///   - maxConnections: the most sessions this pool holds at once (at least 1).
    ///   - acquireTimeout: how long a caller may queue before `.poolTimeout`.
    ///   - pooling: `.transaction` when `conninfo` leads to a transaction-mode pooler.
    ///   - callDeadline: how long one call on a pooled connection may wait for the server
    ///     (see `PostgresConnection.connect(_:callDeadline:)`); `nil` for no limit.
    public init(conninfo: String, maxConnections: Int, acquireTimeout: Duration = .seconds(5),
                pooling: PostgresPooling = .session, callDeadline: Duration? = nil) {
        self.conninfo = conninfo
        self.pooling = pooling
        self.maxConnections = max(1, maxConnections)
        self.acquireTimeout = acquireTimeout
        self.callDeadline = callDeadline
    }

    /// Lends a connection to `body` and takes it back afterwards, even when `body` throws.
    ///
    /// Do not keep the connection beyond `body`. A connection `body` leaves inside a
    /// transaction is discarded rather than reused.
    /// - Throws: `.poolTimeout`, `.poolClosed`, `.connectionFailed`, or `body`'s error.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await checkout()
        defer { checkin(connection) }
        return try await body(connection)
    }

    /// Runs `body` in a transaction on a pooled connection; see `PostgresConnection.transaction`.
    @discardableResult
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in try await connection.transaction(body) }
    }

    /// Runs one statement on a pooled connection.
    /// - Throws: the checkout error or the statement's `PostgresError`.
    @discardableResult
    public func query(_ sql: String, _ binds: [PostgresValue] = []) async throws(PostgresError) -> PostgresRows {
        try await onPooledConnection { connection throws(PostgresError) in try await connection.query(sql, binds) }
    }

    /// Runs one binary COPY on a pooled connection; see `PostgresConnection.copy(_:_:)`.
    /// - Throws: the checkout error or the COPY's `PostgresError`.
    @discardableResult
    public func copy(_ sql: String, _ rows: PostgresCopyRows) async throws(PostgresError) -> Int {
        try await onPooledConnection { connection throws(PostgresError) in try await connection.copy(sql, rows) }
    }

    /// `withConnection` for one call that throws only `PostgresError`, so callers keep the typed error.
    private func onPooledConnection<T: Sendable>(
        _ body: (PostgresConnection) async throws(PostgresError) -> T
    ) async throws(PostgresError) -> T {
        let connection = try await checkout()
        defer { checkin(connection) }
        return try await body(connection)
    }

    /// Current counts, for metrics.
    public var statistics: PostgresPoolStatistics {
        state.withLock { state in
            PostgresPoolStatistics(open: state.open, idle: state.idle.count,
                                   inUse: state.open - state.idle.count, waiting: state.waiters.count)
        }
    }

    /// Refuses new checkouts, fails queued callers with `.poolClosed`, closes idle
    /// connections, and returns once every lent connection has come back and been closed.
    public func close() async {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            let idle = state.idle
            state.idle = []
            state.open -= idle.count
            let waiters = state.waiters
            state.waiters = []
            return (idle, waiters)
        }
        for connection in idle { connection.close() }
        for waiter in waiters {
            waiter.continuation.resume(returning: .failure(Self.closedError))
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.open == 0 { return true }
                state.drained.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: Checkout and checkin

    /// A healthy connection for the caller, opening one when a slot is free.
    func checkout() async throws(PostgresError) -> PostgresConnection {
        var lease = try await lease()
        while true {
            switch lease {
            case .connection(let connection):
                if await connection.checkIdleHealth() { return connection }
                // Stale after a server restart: drop it but keep its slot for a fresh session.
                connection.close()
                lease = .slot
            case .slot:
                do {
                    return try await PostgresConnection.connect(conninfo, pooling: pooling, callDeadline: callDeadline)
                } catch {
                    releaseSlot()
                    throw error
                }
            }
        }
    }

    /// Returns a connection: reused when healthy and idle, otherwise closed and its slot freed.
    func checkin(_ connection: PostgresConnection) {
        let reusable = !connection.isBroken && !connection.isInTransaction
        enum Next { case handed(Waiter), pooled, discard }
        var stale: [PostgresConnection] = []
        let next: Next = state.withLock { state in
            if connection.isBroken {
                // A session lost to a dead, hung or demoted server: the idle ones were opened to
                // the same server, and a hung one looks healthy until a call misses its deadline.
                // Dropping them now spares each its own deadline; the next checkouts connect
                // anew, through the URL's hosts, to whichever server is the primary now.
                stale = state.idle
                state.idle = []
                state.open -= stale.count
            }
            guard reusable, !state.closed else { return .discard }
            if !state.waiters.isEmpty { return .handed(state.waiters.removeFirst()) }
            state.idle.append(connection)
            return .pooled
        }
        for idle in stale { idle.close() }
        switch next {
        case .handed(let waiter):
            waiter.continuation.resume(returning: .success(.connection(connection)))
        case .pooled:
            break
        case .discard:
            connection.close()
            releaseSlot()
        }
    }

    /// Gives a freed slot to the first waiter, or shrinks the pool.
    private func releaseSlot() {
        enum Next { case handed(Waiter), drained([CheckedContinuation<Void, Never>]), none }
        let next: Next = state.withLock { state in
            if !state.closed, !state.waiters.isEmpty { return .handed(state.waiters.removeFirst()) }
            state.open -= 1
            if state.closed, state.open == 0 {
                let drained = state.drained
                state.drained = []
                return .drained(drained)
            }
            return .none
        }
        switch next {
        case .handed(let waiter):
            waiter.continuation.resume(returning: .success(.slot))
        case .drained(let continuations):
            for continuation in continuations { continuation.resume() }
        case .none:
            break
        }
    }

    /// An idle connection, a free slot, or a place in the FIFO queue until one frees up.
    ///
    /// The decision and the enqueueing happen under one lock, so a connection returned in
    /// between cannot be missed. A cancelled task still gets a connection that is free right
    /// away (it may need one to clean up) but does not queue for one.
    private func lease() async throws(PostgresError) -> Lease {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let timeout = acquireTimeout
        let result: Result<Lease, PostgresError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                enum Action { case resume(Result<Lease, PostgresError>), queued }
                let action: Action = state.withLock { state in
                    let cancelled = state.cancelledBeforeQueued.remove(id) != nil
                    if state.closed { return .resume(.failure(Self.closedError)) }
                    if let connection = state.idle.popLast() { return .resume(.success(.connection(connection))) }
                    if state.open < maxConnections {
                        state.open += 1
                        return .resume(.success(.slot))
                    }
                    if cancelled { return .resume(.failure(Self.cancelledError)) }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return .queued
                }
                switch action {
                case .resume(let result):
                    continuation.resume(returning: result)
                case .queued:
                    // A timer that fires after the waiter was served finds no waiter and does nothing.
                    Self.timerQueue.asyncAfter(deadline: .now() + Self.dispatchInterval(timeout)) {
                        self.failWaiter(id, with: PostgresError(
                            kind: .poolTimeout, message: "no connection became free within \(timeout)"))
                    }
                }
            }
        } onCancel: {
            let queued = state.withLock { state in
                if state.waiters.contains(where: { $0.id == id }) { return true }
                state.cancelledBeforeQueued.insert(id)
                return false
            }
            if queued { failWaiter(id, with: Self.cancelledError) }
        }
        // onCancel cannot run any more; forget an id it recorded after the lease was decided.
        state.withLock { _ = $0.cancelledBeforeQueued.remove(id) }
        return try result.get()
    }

    private func failWaiter(_ id: UInt64, with error: PostgresError) {
        let waiter: Waiter? = state.withLock { state in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        guard let waiter else { return }
        waiter.continuation.resume(returning: .failure(error))
    }

    private static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow else { return .never }
        return .nanoseconds(Int(clamping: nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }

    private static let closedError = PostgresError(kind: .poolClosed, message: "the connection pool is closed")
    private static let cancelledError = PostgresError(
        kind: .queryCanceled, message: "task was cancelled while waiting for a pooled connection")
}
