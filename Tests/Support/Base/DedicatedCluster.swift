import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of a test's own, started with `ops/db`, for tests that stop and start
/// the server. The shared test server (`DATABASE_URL`) is never restarted: other suites run in
/// the same process at the same time.
public struct DedicatedCluster: Sendable {
    public let port: Int
    public let directory: String

    /// Conninfo of the cluster's `payhook` database.
    public var url: String { "postgresql:///payhook?host=\(directory)/run&port=\(port)&user=\(owner)" }
    private let owner: String

    /// Creates (fresh) and starts a cluster on `port`; each test picks a port no other uses.
    public static func start(port: Int) async throws -> DedicatedCluster {
        let directory = "/tmp/payhook-test-cluster-\(port)"
        let cluster = DedicatedCluster(port: port, directory: directory, owner: getuid() == 0 ? "postgres" : String(cString: getlogin() ?? strdup("postgres")))
        try await cluster.run("destroy")
        try await cluster.run("start")
        return cluster
    }

    public func stop() async throws { try await run("stop") }
    public func restart() async throws { try await run("start") }
    /// Runs `body`, then destroys the cluster whether or not `body` threw, so no server outlives
    /// the test run.
    public func whileRunning(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await destroy()
            throw error
        }
        await destroy()
    }

    /// Stops the cluster and deletes its files; errors are ignored (cleanup).
    public func destroy() async { try? await run("destroy") }

    private func run(_ command: String) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PAYHOOK_PG_PORT"] = String(port)
        environment["PAYHOOK_PG_DIR"] = directory
        let status = await Subprocess.run([RepositoryPaths.root + "/ops/db", command], environment: environment)
        guard status == 0 else { throw ClusterError(message: "ops/db \(command) on port \(port) exited with \(status)") }
    }

    public struct ClusterError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}

/// Paths inside this repository, found from this source file (`Tests/Support/Base/`).
public enum RepositoryPaths {
    public static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
}

/// Runs programs to completion with posix_spawn + waitpid (Foundation's `Process.waitUntilExit`
/// was seen to hang after `pg_ctl start` left a daemon behind).
public enum Subprocess {
    /// Runs with stdout and stderr sent to /dev/null; returns the exit status (-1 if it could not
    /// start or was killed). Waiting blocks, so it happens on a Dispatch thread, not the pool.
    public static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        let lines = environment.map { "\($0.key)=\($0.value)" }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: spawnAndWait(arguments, environment: lines))
            }
        }
    }

    private static func spawnAndWait(_ arguments: [String], environment: [String]) -> Int32 {
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
}
