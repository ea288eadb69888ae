import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
import Testing

/// The built `payhook` executable (`ops/test` exports `PAYHOOK_BINARY`), run as a user would.
enum PayhookBinary {
    struct Missing: Error {}

    static func path() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["PAYHOOK_BINARY"], !path.isEmpty else {
            Issue.record("PAYHOOK_BINARY is not set: run the tests through ops/test, which builds payhook and exports its path")
            throw Missing()
        }
        guard FileManager.default.isExecutableFile(atPath: path) else {
            Issue.record("PAYHOOK_BINARY=\(path) is not an executable file; build it with `swift build`")
            throw Missing()
        }
        return path
    }

    /// Runs `payhook <arguments>` to completion with exactly `environment`.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Subprocess.Captured {
        let captured = try await Subprocess.capture([try path()] + arguments, environment: environment, timeout: .seconds(60))
        try #require(captured.termination != nil, "payhook \(arguments.joined(separator: " ")) did not finish within 60 s")
        return captured
    }

    /// How long `serve` waits for the "payhook serving" line. Startup is a migration plus two
    /// binds, about 2 s while a full run is starting; the rest is headroom for a slower machine.
    static let startupWindow: Duration = .seconds(90)

    /// Starts `payhook serve --migrate` on ephemeral ports against `databaseURL` and returns
    /// once its "payhook serving" log line names the bound ingress port.
    ///
    /// The startup holds a `SchemaMigrationGate` slot, as in-process migrations do, so the
    /// child's migration takes its turn instead of competing with every suite starting at once.
    static func serve(databaseURL: String, environment extra: [String: String] = [:]) async throws -> (child: ChildProcess, port: Int) {
        var environment = TestSecrets.environment.merging(extra) { $1 }
        environment["DATABASE_URL"] = databaseURL
        environment["PAYHOOK_LOG_LEVEL"] = "info"
        let executable = try path()
        return try await SchemaMigrationGate.run {
            let started = ContinuousClock.now
            let child = try ChildProcess.launch([executable, "serve", "--migrate"], environment: environment)
            var port: Int?
            let listening = await eventually(timeout: startupWindow) {
                port = servingPort(in: child.standardOutput)
                return port != nil || child.ended != nil
            }
            guard listening, let port else {
                let waited = ContinuousClock.now - started
                let threads = child.ended == nil ? threadStates(of: child.pid) : "ended"
                let sessions = await busySessions(databaseURL: databaseURL)
                child.send(signal: SIGKILL)
                let ended = await child.wait()
                Issue.record("""
                    payhook serve did not report its port within \(waited) (\(ended)); \
                    stderr: \(child.standardError.suffix(2000)); stdout: \(child.standardOutput.suffix(2000)); \
                    its threads: \(threads); busy database sessions: \(sessions)
                    """)
                throw Missing()
            }
            return (child, port)
        }
    }

    /// Each thread's state and kernel wait channel, e.g. `R -` or `S futex_wait_queue`: shows
    /// whether a child that is late to start is running, sleeping in the kernel, or blocked.
    static func threadStates(of pid: pid_t) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted().map { tid in
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8)) ?? ""
            // The state follows the parenthesised command name.
            let state = stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
            let wchan = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/wchan", encoding: .utf8)) ?? "?"
            return "\(state) \(wchan.isEmpty || wchan == "0" ? "-" : wchan)"
        }.joined(separator: ", ")
    }

    /// Sessions of the test server that are not idle, with what they wait on; "unavailable" when
    /// the server cannot be asked.
    static func busySessions(databaseURL: String) async -> String {
        guard let connection = try? await PostgresConnection.connect(databaseURL) else { return "unavailable" }
        defer { connection.close() }
        let rows = try? await connection.query("""
            SELECT count(*) AS n, state, coalesce(wait_event_type || ':' || wait_event, '-') AS wait, left(query, 60) AS query
            FROM pg_stat_activity
            WHERE backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()
            GROUP BY 2, 3, 4 ORDER BY 1 DESC LIMIT 10
            """)
        guard let rows else { return "unavailable" }
        let lines = rows.map { row in
            let count = (try? row.decode("n", as: Int.self)) ?? 0
            let state = (try? row.decode("state", as: String.self)) ?? "?"
            let wait = (try? row.decode("wait", as: String.self)) ?? "?"
            let query = (try? row.decode("query", as: String.self)) ?? "?"
            return "\(count)× \(state) \(wait) \(query)"
        }
        return lines.isEmpty ? "none" : lines.joined(separator: "; ")
    }

    /// The port in the `listen` field of the first `"msg":"payhook serving"` JSON line.
    static func servingPort(in output: String) -> Int? {
        for line in output.split(separator: "\n") where line.contains("\"payhook serving\"") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["msg"] as? String == "payhook serving",
                  let listen = object["listen"] as? String,
                  let colon = listen.lastIndex(of: ":")
            else { continue }
            return Int(listen[listen.index(after: colon)...])
        }
        return nil
    }
}

/// Drives distinct signed deliveries from many threads and remembers which ones got a 2xx.
final class DeliveryStream: Sendable {
    private let acknowledged = Mutex<[String]>([])
    private let unanswered = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    var acknowledgedKeys: [String] { acknowledged.withLock { $0 } }
    var acknowledgedCount: Int { acknowledged.withLock { $0.count } }
    /// Requests that got no 2xx (refused connection, reset, 503…).
    var failedCount: Int { unanswered.load(ordering: .relaxed) }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Runs `workers` blocking senders, each on a thread of its own, until `stop()`.
    func run(port: Int, workers: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    await HTTPTestClient.offPool {
                        while !self.stopped.load(ordering: .relaxed) {
                            let delivery = Sign.pxp()
                            let response = HTTPTestClient.sendBlocking(
                                port: port, path: delivery.path, headers: delivery.headers, body: delivery.body, timeoutSeconds: 20)
                            if let response, response.isSuccess {
                                self.acknowledged.withLock { $0.append(delivery.expectedDedupKey) }
                            } else {
                                self.unanswered.add(1, ordering: .relaxed)
                            }
                        }
                    }
                }
            }
        }
    }
}
