import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Ends libpq calls that outlive their deadline by shutting their socket down under them.
///
/// Why: a server that hangs (a stopped process, a stuck host, a partition whose kernel still
/// acknowledges) never answers and never closes, so a blocking libpq call waits forever, and TCP
/// keepalives cannot help because the peer's kernel answers them. `shutdown(2)` on the socket
/// wakes the blocked `poll`/`recv`/`send` inside libpq at once; libpq then sees end of file,
/// reports the connection bad, and the caller discards it. The descriptor itself stays open (it
/// belongs to libpq until `PQfinish`), so it cannot be reused by another file in the meantime.
///
/// One thread watches every armed call; it sleeps while nothing is armed. Arming and disarming
/// cost one uncontended lock each, so the deadline can stay on for every statement.
///
/// Threading: `arm` and `disarm` may be called from any thread. A call must be disarmed on the
/// thread that armed it, before its connection is finished: `shutdown` runs under the lock, and
/// an armed entry guarantees its descriptor is still libpq's.
final class CallDeadlineWatchdog: Sendable {
    static let shared = CallDeadlineWatchdog()

    private struct Entry {
        let socket: Int32
        let expiresAt: UInt64  // DispatchTime.uptimeNanoseconds
        var fired = false
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextTicket: UInt64 = 0
        /// When the watcher wakes next by itself; `nil` while it waits with nothing armed. An
        /// entry that expires earlier wakes it.
        var watcherWakesAt: UInt64?
        var watcherStarted = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    private init() {}

    /// Watches the call about to run on `socket`; returns the ticket to disarm it with.
    func arm(socket: Int32, deadline: Duration) -> UInt64 {
        let expiresAt = DispatchTime.now().uptimeNanoseconds &+ Self.nanoseconds(deadline)
        let (ticket, signal, start) = state.withLock { state in
            state.nextTicket += 1
            state.entries[state.nextTicket] = Entry(socket: socket, expiresAt: expiresAt)
            let signal = state.watcherWakesAt.map { expiresAt < $0 } ?? true
            if signal { state.watcherWakesAt = expiresAt }
            let start = !state.watcherStarted
            state.watcherStarted = true
            return (state.nextTicket, signal, start)
        }
        if start {
            let thread = Thread { [self] in watch() }
            thread.name = "payhook-pg-deadline"
            thread.start()
        }
        if signal { wake.signal() }
        return ticket
    }

    /// Stops watching; true when the deadline passed and the socket was shut down.
    func disarm(_ ticket: UInt64) -> Bool {
        state.withLock { state in state.entries.removeValue(forKey: ticket)?.fired ?? false }
    }

    private func watch() {
        while true {
            let next: UInt64? = state.withLock { state in
                let now = DispatchTime.now().uptimeNanoseconds
                var earliest: UInt64?
                for (ticket, entry) in state.entries where !entry.fired {
                    if entry.expiresAt <= now {
                        _ = shutdown(entry.socket, Int32(SHUT_RDWR))
                        state.entries[ticket]?.fired = true
                    } else {
                        earliest = min(earliest ?? entry.expiresAt, entry.expiresAt)
                    }
                }
                state.watcherWakesAt = earliest
                return earliest
            }
            if let next {
                _ = wake.wait(timeout: DispatchTime(uptimeNanoseconds: next))
            } else {
                wake.wait()
            }
        }
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max / 2 : whole + UInt64(attoseconds / 1_000_000_000)
    }
}

extension PostgresError {
    /// A call that got no answer within its deadline; its connection is discarded. Retryable:
    /// the statement may or may not have been applied, exactly as when a connection drops.
    static func deadlineExceeded(_ deadline: Duration) -> PostgresError {
        PostgresError(kind: .connectionLost, message: "no answer from the database within \(deadline); the connection is discarded")
    }
}
