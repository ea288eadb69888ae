public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a child process ended.
public enum Termination: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signaled(let signal): "killed by signal \(signal)"
        }
    }

    /// Decodes a `waitpid` status by hand (the C macros are not imported).
    init(waitStatus status: Int32) {
        self = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
    }
}

/// A child process started with posix_spawn whose stdout and stderr go to files of its own, so
/// a long-running child never blocks on a full pipe and a test can read its output at any time.
///
/// A dedicated thread reaps it with `waitpid` (never the cooperative pool: a blocked pool thread
/// halves a 2-core machine), so `signal` can never hit a recycled pid.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    public let standardOutputPath: String
    public let standardErrorPath: String
    private let termination = Mutex<Termination?>(nil)
    private let exited = Latch()

    public struct LaunchError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `arguments[0]` (an absolute path) with exactly `environment`.
    ///
    /// The child starts with no blocked signals and default SIGTERM/SIGINT/SIGPIPE dispositions,
    /// whatever the spawning thread had (Dispatch threads block signals).
    public static func launch(_ arguments: [String], environment: [String: String]) throws -> ChildProcess {
        let directory = FileManager.default.temporaryDirectory.path
        let token = UUID().uuidString.prefix(8)
        let name = URL(fileURLWithPath: arguments[0]).lastPathComponent
        let stdoutPath = "\(directory)/payhook-child-\(name)-\(token).out"
        let stderrPath = "\(directory)/payhook-child-\(name)-\(token).err"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw LaunchError(description: "cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        let child = ChildProcess(pid: pid, standardOutputPath: stdoutPath, standardErrorPath: stderrPath)
        Thread.detachNewThread { child.reap() }
        return child
    }

    private init(pid: pid_t, standardOutputPath: String, standardErrorPath: String) {
        self.pid = pid
        self.standardOutputPath = standardOutputPath
        self.standardErrorPath = standardErrorPath
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR {
                status = 0x7f  // treated as "signaled", an unknown ending
                break
            }
        }
        termination.withLock { $0 = Termination(waitStatus: status) }
        exited.open()
    }

    /// Sends `signal` unless the child has already been reaped.
    public func send(signal number: Int32) {
        termination.withLock { ended in
            if ended == nil { _ = kill(pid, number) }
        }
    }

    /// `nil` while running.
    public var ended: Termination? { termination.withLock { $0 } }

    public func wait() async -> Termination {
        await exited.wait()
        return ended!
    }

    /// Waits at most `timeout`; on expiry kills the child (SIGKILL) and returns `nil`, so a hung
    /// child fails its test instead of hanging the run.
    public func wait(timeout: Duration) async -> Termination? {
        if await eventually(timeout: timeout, { self.ended != nil }) { return ended }
        send(signal: SIGKILL)
        _ = await wait()
        return nil
    }

    public var standardOutput: String { (try? String(contentsOfFile: standardOutputPath, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOfFile: standardErrorPath, encoding: .utf8)) ?? "" }

    /// Deletes the output files (call once the test has read what it needs).
    public func removeOutputFiles() {
        try? FileManager.default.removeItem(atPath: standardOutputPath)
        try? FileManager.default.removeItem(atPath: standardErrorPath)
    }
}

extension Subprocess {
    public struct Captured: Sendable {
        /// `nil` when the process did not finish within the timeout (it was killed).
        public let termination: Termination?
        public let standardOutput: String
        public let standardError: String

        public init(termination: Termination?, standardOutput: String, standardError: String) {
            self.termination = termination
            self.standardOutput = standardOutput
            self.standardError = standardError
        }
    }

    /// Runs to completion (at most `timeout`, then SIGKILL) and returns both output streams.
    public static func capture(
        _ arguments: [String], environment: [String: String], timeout: Duration = .seconds(60)
    ) async throws -> Captured {
        let child = try ChildProcess.launch(arguments, environment: environment)
        let termination = await child.wait(timeout: timeout)
        let captured = Captured(termination: termination, standardOutput: child.standardOutput, standardError: child.standardError)
        child.removeOutputFiles()
        return captured
    }
}
