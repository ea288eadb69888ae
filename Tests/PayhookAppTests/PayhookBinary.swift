import Foundation
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

    /// Starts `payhook serve --migrate` on ephemeral ports against `databaseURL` and returns
    /// once its "payhook serving" log line names the bound ingress port.
    static func serve(databaseURL: String, environment extra: [String: String] = [:]) async throws -> (child: ChildProcess, port: Int) {
        var environment = TestSecrets.environment.merging(extra) { $1 }
        environment["DATABASE_URL"] = databaseURL
        environment["PAYHOOK_LOG_LEVEL"] = "info"
        let child = try ChildProcess.launch([try path(), "serve", "--migrate"], environment: environment)
        var port: Int?
        let listening = await eventually(timeout: .seconds(30)) {
            port = servingPort(in: child.standardOutput)
            return port != nil || child.ended != nil
        }
        guard listening, let port else {
            child.send(signal: SIGKILL)
            let ended = await child.wait()
            Issue.record("payhook serve did not report its port (\(ended)); stderr: \(child.standardError.suffix(2000)); stdout: \(child.standardOutput.suffix(2000))")
            throw Missing()
        }
        return (child, port)
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
