import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What every libmicrohttpd callback of one server shares: the handler, the limits, and the
/// list of parked (suspended) connections waiting for their handler's response.
///
/// Locking: `parked` is taken before an exchange's `reply`, never after.
/// `MHD_suspend_connection` is called only while holding `parked`, and so is every resume
/// except the one in `deliver`, the hot path: it takes its entry out of `parked` and counts
/// itself in `resumesInFlight` under the lock, then resumes after releasing it, so the polling
/// threads can park new requests meanwhile (holding the lock across that syscall for every
/// answer of a batch made them wait on it). "Resume" and "stop the daemon" stay mutually
/// exclusive: once `shutDown()` has resumed everything and set `stopping`, no connection can
/// be suspended again and no `respond` can find one, and `shutDown()` returns only when the
/// counted resumes have finished. So `MHD_stop_daemon` never meets a suspended connection
/// (which would be a libmicrohttpd panic) and no late response reaches a freed one.
final class DaemonContext: Sendable {
    /// A suspended libmicrohttpd connection.
    ///
    /// `@unchecked Sendable` invariant: the pointer is only dereferenced (by
    /// `MHD_resume_connection`) by whoever took its entry out of `parked` under the lock, once,
    /// while the connection is still suspended and therefore alive: under the lock, or in
    /// `deliver` just after it, counted in `resumesInFlight` so the daemon cannot stop first.
    struct SuspendedConnection: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    struct ParkedConnection: Sendable {
        let exchange: HTTPExchange
        let connection: SuspendedConnection
        let deadline: ContinuousClock.Instant
    }

    struct Parked {
        var stopping = false
        var byExchange: [ObjectIdentifier: ParkedConnection] = [:]
    }

    let handler: HTTPHandler
    /// Set when the server drives libmicrohttpd itself (`EpollDaemonLoop`): every resume must
    /// wake that loop, since libmicrohttpd without threads of its own does not notice a resume
    /// until its next `MHD_run` (`MHD_resume_connection`'s documentation).
    let loopWake: EventLoopWake?
    let maxBodyBytes: Int
    let handlerTimeout: Duration
    /// The request deadline's bookkeeping; `nil` when the server has none.
    let deadlines: ConnectionDeadlines?
    private let parked = Mutex(Parked())
    /// Resumes `deliver` started under `parked` and finishes outside it; see the type's notes.
    private let resumesInFlight = Atomic<Int>(0)
    /// Requests between their URI-log and completed callbacks; tests use it to prove that
    /// every exchange's retain is balanced.
    let requestsInProgress = Atomic<Int>(0)

    /// Bound on `bufferedBodyBytes`; 0 for none.
    let maxBufferedBodyBytes: Int
    /// Body bytes buffered by requests between their arrival and their completion callback.
    let bufferedBodyBytes = Atomic<Int>(0)
    /// Requests refused for want of body budget.
    let overBodyBudget = Atomic<Int>(0)

    init(handler: @escaping HTTPHandler, maxBodyBytes: Int, handlerTimeout: Duration, requestTimeout: Duration? = nil,
         maxBufferedBodyBytes: Int = 0, loopWake: EventLoopWake? = nil) {
        self.handler = handler
        self.loopWake = loopWake
        self.maxBodyBytes = maxBodyBytes
        self.handlerTimeout = handlerTimeout
        self.deadlines = requestTimeout.map { ConnectionDeadlines(timeout: $0) }
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
    }

    /// Takes `count` bytes of the body budget; false (taking nothing) if that would pass it.
    func reserveBody(_ count: Int) -> Bool {
        guard maxBufferedBodyBytes > 0, count > 0 else { return true }
        var current = bufferedBodyBytes.load(ordering: .relaxed)
        while true {
            guard current + count <= maxBufferedBodyBytes else {
                overBodyBudget.add(1, ordering: .relaxed)
                return false
            }
            let (exchanged, original) = bufferedBodyBytes.compareExchange(
                expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Whether `count` more bytes would fit in the body budget now (nothing is taken).
    func bodyBudgetHasRoom(for count: Int) -> Bool {
        guard maxBufferedBodyBytes > 0 else { return true }
        guard bufferedBodyBytes.load(ordering: .relaxed) + count <= maxBufferedBodyBytes else {
            overBodyBudget.add(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Gives back what `reserveBody` took.
    func releaseBody(_ count: Int) {
        guard maxBufferedBodyBytes > 0, count > 0 else { return }
        bufferedBodyBytes.subtract(count, ordering: .relaxed)
    }

    /// Polling thread, right after the handler returned: returns the response if it is
    /// already there (or 503 while stopping); otherwise suspends the connection.
    func parkUnlessAnswered(_ exchange: HTTPExchange, connection: OpaquePointer) -> HTTPResponse? {
        parked.withLock { parked in
            let ready: HTTPResponse? = exchange.reply.withLock { reply in
                switch reply {
                case .ready(let response):
                    reply = .finished
                    return response
                case .handlerRunning where parked.stopping:
                    reply = .finished
                    return Self.shuttingDown
                case .handlerRunning:
                    reply = .parked
                    return nil
                case .notDispatched, .parked, .finished:
                    reply = .finished
                    return Self.shuttingDown
                }
            }
            if ready == nil {
                parked.byExchange[ObjectIdentifier(exchange)] = ParkedConnection(
                    exchange: exchange, connection: SuspendedConnection(pointer: connection), deadline: .now + handlerTimeout)
                MHD_suspend_connection(connection)
            }
            return ready
        }
    }

    /// The handler's `respond`, from any thread. Stores the response and, if the connection
    /// is parked, resumes it; drops duplicates and responses that arrive too late.
    func deliver(_ response: HTTPResponse, to exchange: HTTPExchange) {
        let suspended: SuspendedConnection? = parked.withLock { parked in
            let wasParked: Bool = exchange.reply.withLock { reply in
                switch reply {
                case .handlerRunning:
                    reply = .ready(response)
                    return false
                case .parked:
                    reply = .ready(response)
                    return true
                case .notDispatched, .ready, .finished:
                    return false
                }
            }
            guard wasParked, let entry = parked.byExchange.removeValue(forKey: ObjectIdentifier(exchange)) else { return nil }
            // Counted before the lock is released: `shutDown()` takes the lock after this, so
            // it sees the count and waits for the resume below.
            resumesInFlight.add(1, ordering: .sequentiallyConsistent)
            return entry.connection
        }
        guard let suspended else { return }
        // The entry is out of `parked`, so nothing else resumes this connection, and the daemon
        // cannot stop (freeing it) until the count drops.
        MHD_resume_connection(suspended.pointer)
        loopWake?.signal()
        resumesInFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Answers 503 for every parked request whose handler missed its deadline.
    func expireOverdue(now: ContinuousClock.Instant) {
        parked.withLock { parked in
            let overdue = parked.byExchange.filter { $0.value.deadline <= now }
            for (key, entry) in overdue {
                parked.byExchange[key] = nil
                Self.resume(entry, with: Self.handlerTimedOut)
            }
            if !overdue.isEmpty { loopWake?.signal() }
        }
    }

    /// Before `MHD_stop_daemon`: resume every parked connection and refuse to park more.
    func shutDown() {
        parked.withLock { parked in
            parked.stopping = true
            for entry in parked.byExchange.values {
                Self.resume(entry, with: Self.shuttingDown)
            }
            parked.byExchange = [:]
        }
        loopWake?.signal()
        // Resumes that left the lock before `stopping` was set: a syscall each, so this wait
        // is a few microseconds.
        while resumesInFlight.load(ordering: .sequentiallyConsistent) > 0 {
            sched_yield()
        }
    }

    /// Test hook: how many connections wait for a handler.
    var parkedCount: Int { parked.withLock { $0.byExchange.count } }

    private static func resume(_ entry: ParkedConnection, with response: HTTPResponse) {
        entry.exchange.reply.withLock { reply in
            if case .parked = reply { reply = .ready(response) }
        }
        MHD_resume_connection(entry.connection.pointer)
    }

    static let shuttingDown = HTTPResponse.text(503, "server shutting down\n")
    static let handlerTimedOut = HTTPResponse.text(503, "handler timed out\n")
}
