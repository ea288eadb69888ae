import Foundation

/// PgBouncer (Debian's 1.18) in front of a test's own cluster, started with `ops/pgbouncer`:
/// the transaction-mode pooler that `PAYHOOK_DATABASE_POOLING=transaction` is for.
/// It listens on a Unix socket inside the cluster's directory, so no TCP port is shared.
public struct PgBouncer: Sendable {
    public let cluster: DedicatedCluster
    public let port: Int

    public var directory: String { cluster.directory + "/pgbouncer-\(port)" }

    /// Conninfo of the cluster's `payhook` database through PgBouncer.
    public var url: String {
        cluster.url.replacingOccurrences(of: "host=\(cluster.directory)/run&port=\(cluster.port)",
                                         with: "host=\(directory)&port=\(port)")
    }

    /// Starts PgBouncer in `mode` (`transaction` or `session`) with `poolSize` server sessions
    /// shared by every client.
    public static func start(in front: DedicatedCluster, port: Int, mode: String = "transaction",
                             poolSize: Int) async throws -> PgBouncer {
        let bouncer = PgBouncer(cluster: front, port: port)
        try await bouncer.run("start", extra: ["PAYHOOK_PGBOUNCER_MODE": mode,
                                               "PAYHOOK_PGBOUNCER_POOL_SIZE": String(poolSize)])
        return bouncer
    }

    /// Runs `body`, then stops PgBouncer whether or not `body` threw.
    public func whileRunning(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    /// Stops it; errors are ignored (cleanup).
    public func stop() async { try? await run("stop", extra: [:]) }

    /// PgBouncer's own log (connections, and errors it reports to clients).
    public var log: String { (try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? "" }

    private func run(_ command: String, extra: [String: String]) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PAYHOOK_PG_PORT"] = String(cluster.port)
        environment["PAYHOOK_PG_DIR"] = cluster.directory
        environment["PAYHOOK_PGBOUNCER_PORT"] = String(port)
        environment["PAYHOOK_PGBOUNCER_DIR"] = directory
        environment.merge(extra) { _, new in new }
        let status = await Subprocess.run([RepositoryPaths.root + "/ops/pgbouncer", command], environment: environment)
        guard status == 0 else {
            throw DedicatedCluster.ClusterError(message: "ops/pgbouncer \(command) on port \(port) exited with \(status)")
        }
    }
}
