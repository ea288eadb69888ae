import CLibPQ
import Foundation
import PayhookCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One `NOTIFY` received on a channel the listener listens to.
public struct PostgresNotification: Sendable, Hashable {
    /// The channel, or `""` for the listener's own signal that it (re)connected and anything
    /// sent while it was not listening was missed.
    public let channel: String
    /// The payload given to `NOTIFY` / `pg_notify` (empty when none).
    public let payload: String

    /// Creates a notification.
    public init(channel: String, payload: String) {
        self.channel = channel
        self.payload = payload
    }
}

/// Receives `LISTEN`/`NOTIFY` messages on a dedicated session and thread.
///
/// Why its own thread: waiting for notifications means sitting in `poll()` indefinitely, which
/// must not occupy one of the cooperative pool's threads or a pooled connection.
///
/// Delivery is a wake-up hint, not a queue: NOTIFY is lost while no session listens. So each
/// time the listener (re)establishes its `LISTEN`s, including the first time, it yields a
/// notification with channel `""`, and consumers must then poll the database for anything
/// they may have missed. After a lost connection it reconnects by itself with backoff
/// (50 ms doubling to 1 s). If the consumer falls more than 4096 notifications behind, the
/// oldest are dropped and a `""` signal follows.
///
/// Threading: `start` and `stop` may be called from anywhere; `notifications` has one consumer.
public final class PostgresListener: Sendable {
    private let worker: ListenerWorker
    /// The stream of notifications; finishes after `stop()`. Iterate it from one task only.
    public let notifications: AsyncStream<PostgresNotification>

    private init(worker: ListenerWorker, notifications: AsyncStream<PostgresNotification>) {
        self.worker = worker
        self.notifications = notifications
    }

    /// Starts listening on `channels` in the background; never throws, because connection
    /// failures are retried until `stop()`.
    /// - Parameters:
    ///   - conninfo: libpq URI or `key=value` string.
    ///   - channels: channel names, quoted with `PQescapeIdentifier`, so any text is safe;
    ///     empty names are ignored (PostgreSQL rejects them).
    ///   - callDeadline: a session that has been quiet this long is asked `SELECT 1` and must
    ///     answer within the same time, or it is dropped and the listener reconnects (following
    ///     a multi-host URL to the new primary). A hung server sends nothing and closes nothing,
    ///     so without this the listener would wait on it forever. `nil`: never asked.
    public static func start(conninfo: String, channels: [String],
                             callDeadline: Duration? = defaultCallDeadline) -> PostgresListener {
        let (stream, continuation) = AsyncStream.makeStream(
            of: PostgresNotification.self, bufferingPolicy: .bufferingNewest(4096))
        let worker = ListenerWorker(conninfo: conninfo, channels: channels.filter { !$0.isEmpty },
                                    callDeadline: callDeadline, continuation: continuation)
        continuation.onTermination = { _ in worker.requestStop() }
        let thread = Thread { worker.run() }
        thread.name = "payhook-pg-listener"
        thread.start()
        return PostgresListener(worker: worker, notifications: stream)
    }

    /// The listener's deadline unless a caller gives one: as `serve`'s default database call
    /// deadline, so a hung primary costs the listener no more than it costs ingest.
    public static let defaultCallDeadline: Duration = .seconds(5)

    /// Stops listening, closes the session and finishes `notifications`. Returns at once;
    /// the thread exits within moments. Safe to call more than once.
    public func stop() {
        worker.requestStop()
    }
}

/// The listener thread's loop.
///
/// `@unchecked Sendable` invariant: the only mutable state is `stopped` (an `Atomic`) and the
/// wake pipe's descriptors (fixed at init, closed in deinit); the `PGconn` lives in `run()`'s
/// local variable on the listener thread and is never shared.
final class ListenerWorker: @unchecked Sendable {
    private let conninfo: String
    private let channels: [String]
    private let callDeadline: Duration?
    private let continuation: AsyncStream<PostgresNotification>.Continuation
    private let stopped = Atomic<Bool>(false)
    /// Writing a byte here wakes the thread from `poll()` so `stop()` takes effect at once.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init(conninfo: String, channels: [String], callDeadline: Duration? = nil,
         continuation: AsyncStream<PostgresNotification>.Continuation) {
        self.conninfo = conninfo
        self.channels = channels
        self.callDeadline = callDeadline
        self.continuation = continuation
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    func requestStop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        if wakeWrite >= 0 { _ = write(wakeWrite, &byte, 1) }
        continuation.finish()
    }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Connect, LISTEN, signal, relay notifications until the session dies; repeat until stopped.
    func run() {
        var failures = 0
        while !isStopped {
            guard case .success(let owned) = Libpq.connect(conninfo, callDeadline: callDeadline), let pointer = owned.take() else {
                failures += 1
                wait(Self.reconnectBackoff.delay(afterAttempt: failures, unitRandom: 1))
                continue
            }
            defer { PQfinish(pointer) }
            guard listen(pointer) else {
                failures += 1
                wait(Self.reconnectBackoff.delay(afterAttempt: failures, unitRandom: 1))
                continue
            }
            failures = 0
            deliver(PostgresNotification(channel: "", payload: ""))
            relay(pointer)
        }
    }

    private func listen(_ pointer: OpaquePointer) -> Bool {
        for channel in channels {
            let utf8 = Array(channel.utf8CString)
            guard let quoted = PQescapeIdentifier(pointer, utf8, utf8.count - 1) else { return false }
            let sql = "LISTEN " + String(cString: quoted)
            PQfreemem(quoted)
            guard execute(pointer, sql) else { return false }
        }
        return true
    }

    /// Runs a command under the deadline; true when it succeeded in time.
    private func execute(_ pointer: OpaquePointer, _ sql: String) -> Bool {
        let (result, expired) = Libpq.withDeadline(callDeadline, pointer) { PQexec(pointer, sql) }
        guard let result else { return false }
        let ok = PQresultStatus(result) == PGRES_COMMAND_OK || PQresultStatus(result) == PGRES_TUPLES_OK
        PQclear(result)
        return ok && !expired
    }

    /// Waits on the session's socket and the wake pipe; returns when the session is lost or
    /// a stop was requested.
    private func relay(_ pointer: OpaquePointer) {
        let socket = PQsocket(pointer)
        guard socket >= 0 else { return }
        let quietMilliseconds = callDeadline.map { Int32(clamping: CallDeadlineWatchdog.nanoseconds($0) / 1_000_000) } ?? -1
        while !isStopped {
            var descriptors = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, nfds_t(descriptors.count), quietMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0 {
                // Quiet for a whole deadline: make sure the server is still there.
                guard execute(pointer, "SELECT 1") else { return }
            } else {
                if descriptors[1].revents != 0 { return }
                guard descriptors[0].revents != 0 else { continue }
                if PQconsumeInput(pointer) == 0 { return }
            }
            while let notify = PQnotifies(pointer) {
                let channel = notify.pointee.relname.map { String(cString: $0) } ?? ""
                let payload = notify.pointee.extra.map { String(cString: $0) } ?? ""
                PQfreemem(notify)
                deliver(PostgresNotification(channel: channel, payload: payload))
            }
            if PQstatus(pointer) != CONNECTION_OK { return }
        }
    }

    private func deliver(_ notification: PostgresNotification) {
        guard !isStopped else { return }
        if case .dropped = continuation.yield(notification), !notification.channel.isEmpty {
            // The oldest was dropped; the newest element now tells the consumer to poll.
            _ = continuation.yield(PostgresNotification(channel: "", payload: ""))
        }
    }

    /// Sleeps for the backoff, waking early on stop.
    private func wait(_ pause: Duration) {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(clamping: Int((pause.seconds * 1000).rounded())))
    }

    /// The pause after the `n`th failed connect or LISTEN in a row: 50 ms doubling to 1 s, so a
    /// restarted server is listened to again within a second of its return. No jitter: one
    /// listener per role and process.
    static let reconnectBackoff = RetryPolicy(base: .milliseconds(50), maximum: .seconds(1), jitter: 0)
}
