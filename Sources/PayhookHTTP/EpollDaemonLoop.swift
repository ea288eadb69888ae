import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The thread that runs a libmicrohttpd daemon started without threads of its own
/// (`external_epoll`): it sleeps on the daemon's epoll descriptor and calls `MHD_run` on every
/// wake-up.
///
/// Why not libmicrohttpd's own threads: its epoll loop (0.9.75) can sleep through 128 ready
/// requests (docs/decisions/0003), and its poll(2) loop walks every connection of the thread on
/// every wake-up, which with many keep-alive connections and deliveries arriving paced cost more
/// than the requests themselves (docs/decisions/0009). Driven from here, `MHD_run` drains epoll
/// with a zero timeout (no second sleep), and a wake-up costs what is ready.
///
/// Threading: the daemon-wide calls (`MHD_run`, `MHD_quiesce_daemon`) are made on the loop
/// thread only; `quiesce()` and `stop()` ask for them through `requests` and the wake-up
/// descriptor, and wait. Request callbacks run on the loop thread. `MHD_resume_connection` may
/// still be called from any thread, followed by `EventLoopWake.signal()`: without threads of its
/// own, libmicrohttpd does not wake for a resume (`DaemonContext` does both).
///
/// `@unchecked Sendable`: `daemon`, `epollFD`, `wake` and `name` are fixed at init; the rest is
/// in `requests` (a `Mutex`) or is a semaphore.
final class EpollDaemonLoop: @unchecked Sendable {
    private struct Requests {
        var stop = false
        var quiesce = false
        var quiescedSocket: Int32?
    }

    private let daemon: OpaquePointer
    private let epollFD: Int32
    private let wake: EventLoopWake
    private let name: String
    private let requests = Mutex(Requests())
    private let quiesced = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)

    /// Starts the loop thread for `daemon`, which must have been started with `external_epoll`.
    /// `nil` if the daemon has no epoll descriptor.
    init?(daemon: OpaquePointer, wake: EventLoopWake, name: String) {
        let epollFD = payhook_mhd_epoll_fd(daemon)
        guard epollFD >= 0 else { return nil }
        self.daemon = daemon
        self.epollFD = epollFD
        self.wake = wake
        self.name = name
        // Named from inside: Foundation's `Thread.name`, set before `start()`, left the new
        // thread unnamed and renamed another one.
        let thread = Thread { [self] in
            payhook_name_this_thread(self.name)
            run()
        }
        thread.start()
    }

    /// `MHD_quiesce_daemon`, run on the loop thread; returns the listen socket it hands back
    /// (close it after `MHD_stop_daemon`), or -1. Call at most once, and not from a callback.
    func quiesce() -> Int32 {
        requests.withLock { $0.quiesce = true }
        wake.signal()
        quiesced.wait()
        return requests.withLock { $0.quiescedSocket ?? -1 }
    }

    /// Runs the daemon once more (so connections resumed before this call are answered), then
    /// ends the thread and returns when it has. The daemon may be stopped afterwards. Not from
    /// a callback: it would wait for itself.
    func stop() {
        requests.withLock { $0.stop = true }
        wake.signal()
        exited.wait()
    }

    private func run() {
        while true {
            payhook_mhd_wait(daemon, epollFD, wake.fd)
            wake.rearm()
            let (stopping, quiescing) = requests.withLock { ($0.stop, $0.quiesce && $0.quiescedSocket == nil) }
            if quiescing {
                let socket = MHD_quiesce_daemon(daemon)
                requests.withLock { $0.quiescedSocket = socket }
                quiesced.signal()
            }
            _ = payhook_mhd_run(daemon)
            if stopping { break }
        }
        exited.signal()
    }
}

/// The eventfd that wakes an `EpollDaemonLoop`: after a resume, a quiesce or a stop request.
///
/// A flag spares the write while a wake-up is already pending, so the resumes of one committed
/// batch cost one write and one wake-up of the loop, not one each. Why no signal is lost: a
/// signaller changes its state (a resume, a request) before `signal()`; the loop calls
/// `rearm()` before `MHD_run` and reading that state. A `signal()` that finds the flag set comes
/// before that `rearm()` (both exchange the flag), so the run after it sees the change; one that
/// finds it clear writes, and the loop's next wait returns at once.
final class EventLoopWake: Sendable {
    let fd: Int32
    private let pending = Atomic<Bool>(false)

    /// `nil` if no eventfd can be made.
    init?() {
        let fd = payhook_wake_fd()
        guard fd >= 0 else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    /// From any thread, after the change the loop must see.
    func signal() {
        guard !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(fd, $0.baseAddress, $0.count) }
    }

    /// Loop thread, after waking and before running the daemon.
    func rearm() {
        _ = pending.exchange(false, ordering: .acquiringAndReleasing)
    }
}
