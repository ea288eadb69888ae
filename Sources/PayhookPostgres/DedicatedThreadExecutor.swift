import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A task executor with one thread of its own, on which `PostgresConnection` runs libpq calls
/// inline instead of hopping to the connection's queue and back.
///
/// Why: a statement issued from Swift's cooperative pool costs two thread hand-offs (to the
/// connection's dispatch queue, then the continuation back to the pool), each a futex wake-up
/// and a context switch, and every loop in the process shares the same two cooperative threads
/// and the same dispatch worker pool for them. A loop that issues thousands of short statements
/// a second (a processor worker) spent most of its time in those hand-offs, and two such loops
/// in one process were slower than one (bench/README.md, "Processing throughput"). On its own
/// thread a loop blocks in libpq exactly as a single-threaded process would, and W loops in one
/// process behave like W processes.
///
/// Use: `withTaskExecutorPreference(executor) { … }` around the loop; child tasks inherit the
/// preference. Code isolated to an actor still runs on that actor's executor.
///
/// Threading: `enqueue` may be called from any thread. The thread runs jobs one at a time, in
/// order, until ``shutdown()``, and exits once it is shut down and has no job left. A job
/// enqueued after that still runs, on a dispatch thread, so a task that is still using the
/// executor is never stranded.
public final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `State` is only touched under its lock, and `signal` is a
    // semaphore, itself safe to use from any thread.
    private struct State {
        var jobs: [UnownedJob] = []
        var head = 0
        var stopped = false
        var exited = false
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)

    /// Starts the thread.
    /// - Parameter name: the thread's name, as `ps`, `top`, `perf` and debuggers show it (the
    ///   kernel keeps 15 bytes).
    public init(name: String) {
        let thread = Thread { [self] in
            Self.nameCurrentThread(name)
            run()
        }
        thread.start()
    }

    /// Gives the calling thread its name as the kernel keeps it (15 bytes), by writing
    /// `/proc/thread-self/comm`. Not Foundation's `Thread.name`, which did not reliably reach
    /// the kernel on Linux: set before `start()` it named the creating thread instead (the
    /// process's main thread showed as a writer's name), and set from inside the new thread it
    /// was sometimes lost (a full test run saw the cooperative pool's name).
    private static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        #endif
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let queued = state.withLock { state in
            guard !state.exited else { return false }
            state.jobs.append(unowned)
            return true
        }
        if queued {
            signal.signal()
        } else {
            let executor = asUnownedTaskExecutor()
            DispatchQueue.global().async { unowned.runSynchronously(on: executor) }
        }
    }

    /// Lets the thread exit once every job enqueued so far (or later) has run and none is left.
    public func shutdown() {
        state.withLock { $0.stopped = true }
        signal.signal()
    }

    /// True on a dedicated executor's thread, where a blocking call holds up only the tasks
    /// that chose this executor; false on the cooperative pool and on dispatch's threads.
    static var isCurrentThreadDedicated: Bool { pthread_getspecific(dedicatedKey) != nil }

    private static let dedicatedKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private func run() {
        pthread_setspecific(Self.dedicatedKey, UnsafeRawPointer(bitPattern: 1))
        let executor = asUnownedTaskExecutor()
        while true {
            signal.wait()
            let next: UnownedJob?? = state.withLock { state in
                if state.head < state.jobs.count {
                    let job = state.jobs[state.head]
                    state.head += 1
                    // Compact once the consumed prefix dominates, so the array does not grow forever.
                    if state.head >= 64, state.head * 2 >= state.jobs.count {
                        state.jobs.removeFirst(state.head)
                        state.head = 0
                    }
                    return .some(job)
                }
                guard state.stopped else { return .some(nil) }
                state.exited = true
                return .none
            }
            switch next {
            case .some(.some(let job)): job.runSynchronously(on: executor)
            case .some(.none): continue  // a wake with no job: not stopped, so more may come
            case .none: return
            }
        }
    }
}
