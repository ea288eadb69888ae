import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PayhookPostgres
import Synchronization
import Testing

/// Access to the test server named by `DATABASE_URL`, one fresh schema per test.
enum TestDatabase {
    /// The server under test; a test fails (never skips) when it is not configured.
    static func url() throws -> String {
        let url = ProcessInfo.processInfo.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        return try #require(url, """
            DATABASE_URL is not set. Start a test server with \
            `PAYHOOK_PG_PORT=54331 ops/db start` and run `DATABASE_URL=<printed url> swift test`.
            """)
    }

    /// Runs `body` against a new schema (first in `search_path` for every session opened with
    /// the given conninfo) and drops it afterwards, so tests can run in parallel.
    ///
    /// - Parameter exclusive: restart tests take the server for themselves; every other test
    ///   shares it. Without this, a restart would break whatever else is running.
    static func withSchema(exclusive: Bool = false, _ body: (_ conninfo: String) async throws -> Void) async throws {
        let base = try url()
        await ServerGate.shared.acquire(exclusive: exclusive)
        do {
            let schema = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let admin = try await PostgresConnection.connect(base)
            try await admin.execute("CREATE SCHEMA \(schema)")
            do {
                try await body(conninfo(base, searchPath: schema))
            } catch {
                await dropSchema(schema, base: base)
                throw error
            }
            await dropSchema(schema, base: base)
            admin.close()
        } catch {
            await ServerGate.shared.release(exclusive: exclusive)
            throw error
        }
        await ServerGate.shared.release(exclusive: exclusive)
    }

    private static func dropSchema(_ schema: String, base: String) async {
        // A restart test may leave the server briefly unreachable; a leftover schema is harmless.
        guard let connection = try? await PostgresConnection.connect(base) else { return }
        try? await connection.execute("DROP SCHEMA \(schema) CASCADE")
        connection.close()
    }

    /// `base` with `options=-c search_path=<schema>` added, for URIs and key=value strings.
    static func conninfo(_ base: String, searchPath schema: String) -> String {
        if base.contains("://") {
            return base + (base.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)"
        }
        return base + " options='-c search_path=\(schema)'"
    }

    /// Stops and starts the server behind `DATABASE_URL` with `ops/db`, which only knows
    /// clusters it created: the URL must name its socket directory (`host=<dir>/run`) and port.
    static func stopServer() async throws { try await runOpsDB("stop") }
    static func startServer() async throws { try await runOpsDB("start") }

    private static func runOpsDB(_ command: String) async throws {
        let url = try url()
        let query = URLComponents(string: url)?.queryItems ?? []
        let host = try #require(query.first { $0.name == "host" }?.value,
                                "restart tests need a DATABASE_URL printed by ops/db (host=<dir>/run)")
        let port = try #require(query.first { $0.name == "port" }?.value,
                                "restart tests need a DATABASE_URL printed by ops/db (port=…)")
        try #require(host.hasSuffix("/run"), "restart tests need a DATABASE_URL printed by ops/db (host=<dir>/run)")
        let clusterDirectory = String(host.dropLast(4))
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ops/db")
        var environment = ProcessInfo.processInfo.environment
        environment["PAYHOOK_PG_PORT"] = port
        environment["PAYHOOK_PG_DIR"] = clusterDirectory
        let arguments = [script.path, command]
        let environmentLines = environment.map { "\($0.key)=\($0.value)" }
        // posix_spawn + waitpid rather than Foundation.Process, whose waitUntilExit was seen to
        // hang after `pg_ctl start` left a daemon behind. Waiting blocks, so not on the pool.
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: spawnAndWait(arguments, environment: environmentLines))
            }
        }
        #expect(status == 0, "ops/db \(command) failed with status \(status)")
    }
}

/// Runs a program with stdout and stderr sent to /dev/null; returns its exit status (-1 if it
/// could not be started).
private func spawnAndWait(_ arguments: [String], environment: [String]) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    guard posix_spawn(&pid, arguments[0], &actions, nil, argv, envp) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        if errno != EINTR { return -1 }
    }
    // WIFEXITED / WEXITSTATUS by hand; the C macros are not imported.
    return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
}

/// A fair reader/writer gate: ordinary tests share the server, restart tests hold it alone.
actor ServerGate {
    static let shared = ServerGate()
    private var readers = 0
    private var writer = false
    private var queue: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    func acquire(exclusive: Bool) async {
        if queue.isEmpty, canEnter(exclusive) {
            enter(exclusive)
            return
        }
        await withCheckedContinuation { queue.append((exclusive, $0)) }
    }

    func release(exclusive: Bool) {
        if exclusive { writer = false } else { readers -= 1 }
        while let first = queue.first, canEnter(first.exclusive) {
            queue.removeFirst()
            enter(first.exclusive)
            first.continuation.resume()
        }
    }

    private func canEnter(_ exclusive: Bool) -> Bool { exclusive ? !writer && readers == 0 : !writer }
    private func enter(_ exclusive: Bool) { if exclusive { writer = true } else { readers += 1 } }
}

/// Polls `condition` until it holds or `timeout` passes: bounded waiting, never a bare sleep.
func eventually(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// A one-shot signal tasks can await.
final class Latch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Collects a listener's notifications so tests can wait for them with a deadline.
final class NotificationRecorder: Sendable {
    private final class Storage: Sendable {
        let items = Mutex<[PostgresNotification]>([])
    }
    private let storage = Storage()
    private let consumer: Task<Void, Never>

    init(_ listener: PostgresListener) {
        let stream = listener.notifications
        let storage = self.storage
        consumer = Task {
            for await notification in stream { storage.items.withLock { $0.append(notification) } }
        }
    }

    var all: [PostgresNotification] { storage.items.withLock { $0 } }

    func count(channel: String) -> Int { all.filter { $0.channel == channel }.count }

    func cancel() { consumer.cancel() }
}
