#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Cuts off requests whose headers and body take longer than the request deadline to arrive.
///
/// libmicrohttpd's own timeout is an idle timeout: any byte resets it, so a client trickling a
/// byte every few seconds holds a connection (and its memory, and a slot of its address's
/// connection limit) for as long as it likes. This adds an absolute deadline: armed when a
/// connection is accepted (its first request) or when a later request's first line arrives,
/// disarmed once the request is complete and goes to the handler. A sweep shuts down the socket
/// of every connection past its deadline; libmicrohttpd then sees the end of the stream on its
/// own polling thread and closes the connection the normal way, so no libmicrohttpd state is
/// touched from the sweep's thread.
///
/// A keep-alive connection between requests is governed by the idle timeout only: until the
/// next request line is complete, libmicrohttpd says nothing that would tell idleness from a
/// slow start.
///
/// `shutdown(2)` is called under the lock, and entries leave the table in libmicrohttpd's
/// connection-closed notification, which comes before it closes the descriptor: so a
/// descriptor is never shut down after libmicrohttpd closed it (and the number may belong to
/// another connection).
final class ConnectionDeadlines: Sendable {
    private struct Entry {
        let fd: Int32
        var deadline: ContinuousClock.Instant?
    }

    private let timeout: Duration
    private let entries = Mutex<[UInt: Entry]>([:])
    /// Requests cut off so far.
    let cutOff = Atomic<Int>(0)

    init(timeout: Duration) {
        self.timeout = timeout
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    /// Polling thread, connection accepted: its first request's deadline starts now.
    func connectionStarted(_ connection: OpaquePointer, fd: Int32, now: ContinuousClock.Instant = .now) {
        guard fd >= 0 else { return }
        let entry = Entry(fd: fd, deadline: now + timeout)
        entries.withLock { $0[Self.key(connection)] = entry }
    }

    /// Polling thread, before libmicrohttpd closes the descriptor.
    func connectionClosed(_ connection: OpaquePointer) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(connection)) }
    }

    /// Polling thread, a request line arrived: arms the deadline unless the first request's is running.
    func requestStarted(_ connection: OpaquePointer, now: ContinuousClock.Instant = .now) {
        let deadline = now + timeout
        entries.withLock { entries in
            let key = Self.key(connection)
            guard var entry = entries[key], entry.deadline == nil else { return }
            entry.deadline = deadline
            entries[key] = entry
        }
    }

    /// Polling thread, the request is complete (or answered early): no deadline until the next one.
    func requestArrived(_ connection: OpaquePointer) {
        entries.withLock { entries in
            let key = Self.key(connection)
            guard entries[key]?.deadline != nil else { return }
            entries[key]?.deadline = nil
        }
    }

    /// Sweep: shuts down every connection whose request is overdue; returns how many.
    @discardableResult
    func cutOverdue(now: ContinuousClock.Instant) -> Int {
        let count = entries.withLock { entries -> Int in
            var count = 0
            for (key, entry) in entries {
                guard let deadline = entry.deadline, deadline <= now else { continue }
                shutdown(entry.fd, Int32(SHUT_RDWR))
                entries[key]?.deadline = nil
                count += 1
            }
            return count
        }
        if count > 0 { cutOff.add(count, ordering: .relaxed) }
        return count
    }

    /// Connections currently tracked (test hook).
    var trackedCount: Int { entries.withLock { $0.count } }
}
