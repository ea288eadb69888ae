import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
import Testing

/// payhook through a PostgreSQL failover: a primary with a synchronous standby (`ops/db-pair`),
/// `payhook serve` (every role) on a multi-host URL with `target_session_attrs=read-write`, and
/// senders that retry each delivery until it is acknowledged, as providers do. The primary
/// crashes, or hangs (SIGSTOP: alive but silent), and the standby is promoted 3 s later.
///
/// Asserts: every acknowledged delivery is stored and processed on the new primary, ingest
/// answers 2xx again within 10 s of the fault, and the payhook process lived through it.
/// Prints the recovery time it measured. Clusters on 127.0.0.1:54355 (primary) and :54356.
@Suite("Through a PostgreSQL failover", .serialized, .timeLimit(.minutes(4)))
struct FailoverTests {
    enum Fault: String { case crash, hang }

    static let primaryPort = 54355
    static let standbyPort = 54356
    static let promoteAfter: Duration = .seconds(3)
    static let recoveryTarget: Duration = .seconds(10)

    @Test("the primary crashes: nothing acknowledged is lost and ingest recovers within 10 s")
    func primaryCrashes() async throws { try await failover(.crash) }

    @Test("the primary hangs (SIGSTOP): calls are cut off at their deadline, nothing acknowledged is lost, ingest recovers within 10 s")
    func primaryHangs() async throws { try await failover(.hang) }

    @Test("a listener on a hung primary notices within its deadline and listens again on the promoted standby")
    func listenerFollowsFailover() async throws {
        try await pair("start")
        do {
            let owner = getuid() == 0 ? "postgres" : String(cString: getlogin() ?? strdup("postgres"))
            let url = "postgresql://127.0.0.1:\(Self.primaryPort),127.0.0.1:\(Self.standbyPort)/payhook?user=\(owner)&target_session_attrs=read-write"
            let channel = "failover_\(UInt32.random(in: 0...UInt32.max))"
            let listener = PostgresListener.start(conninfo: url, channels: [channel], callDeadline: .seconds(1))
            defer { listener.stop() }
            let received = Mutex<[PostgresNotification]>([])
            let consumer = Task { for await notification in listener.notifications { received.withLock { $0.append(notification) } } }
            defer { consumer.cancel() }
            let listening = await eventually(timeout: .seconds(10)) { received.withLock { $0.count } == 1 }
            try #require(listening, "the listener did not signal that it listens")

            try await pair("hang")
            try await Task.sleep(for: Self.promoteAfter)
            try await pair("promote")
            // "" again: it gave up the hung session and listens on the new primary. A listener
            // without a deadline would wait on the hung session for ever.
            let relistened = await eventually(timeout: .seconds(15)) {
                received.withLock { $0.filter { $0.channel.isEmpty }.count } >= 2
            }
            #expect(relistened, "the listener did not reconnect after the primary hung")
            let newPrimary = try await PostgresConnection.connect("postgresql://127.0.0.1:\(Self.standbyPort)/payhook?user=\(owner)")
            defer { newPrimary.close() }
            try await newPrimary.query("SELECT pg_notify($1, 'after failover')", [.text(channel)])
            let delivered = await eventually(timeout: .seconds(10)) {
                received.withLock { $0.contains(PostgresNotification(channel: channel, payload: "after failover")) }
            }
            #expect(delivered, "a NOTIFY on the new primary did not reach the listener")
        } catch {
            await destroyPair()
            throw error
        }
        await destroyPair()
    }

    private func failover(_ fault: Fault) async throws {
        try await pair("start")
        do {
            try await run(fault)
        } catch {
            await destroyPair()
            throw error
        }
        await destroyPair()
    }

    private func run(_ fault: Fault) async throws {
        let owner = getuid() == 0 ? "postgres" : String(cString: getlogin() ?? strdup("postgres"))
        let url = "postgresql://127.0.0.1:\(Self.primaryPort),127.0.0.1:\(Self.standbyPort)/payhook?user=\(owner)&target_session_attrs=read-write"
        let (child, port) = try await PayhookBinary.serve(databaseURL: url)
        defer { child.removeOutputFiles() }
        let senders = RetryingSenders()
        let sending = Task { await senders.run(port: port, workers: 8) }

        let flowing = await eventually(timeout: .seconds(30)) { senders.acknowledgedCount >= 200 }
        try #require(flowing, "deliveries were not flowing before the fault; stderr: \(child.standardError.suffix(1000))")
        try await pair(fault.rawValue)
        // Once the command returns, the primary's processes are killed or stopped.
        let faultAt = ContinuousClock.now
        try await Task.sleep(for: Self.promoteAfter)
        try await pair("promote")
        let recovered = await eventually(timeout: .seconds(30)) { senders.firstAcknowledgement(sentAfter: faultAt) != nil }
        // Keep sending on the new primary for a while, then let the senders finish.
        try await Task.sleep(for: .seconds(3))
        senders.stop()
        await sending.value

        let recovery = senders.firstAcknowledgement(sentAfter: faultAt).map { $0 - faultAt }
        let slowest = senders.slowestAnswer(after: faultAt)
        print("failover (\(fault)): ingest answered 2xx again \(recovery.map { "\($0)" } ?? "never") after the fault; "
              + "the slowest answer took \(slowest); \(senders.acknowledgedCount) deliveries acknowledged, "
              + "\(senders.failedCount) attempts refused or unanswered")
        #expect(recovered, "ingest did not answer 2xx within 30 s of the fault; stderr: \(child.standardError.suffix(2000))")
        if let recovery {
            #expect(recovery < Self.recoveryTarget, "ingest answered 2xx again only \(recovery) after the \(fault)")
        }
        #expect(senders.failedCount > 0, "no request was refused: the fault did not land mid-stream")
        #expect(child.ended == nil, "payhook did not live through the failover: \(String(describing: child.ended)); stderr: \(child.standardError.suffix(2000))")

        // On the new primary: every acknowledged delivery is stored, then processed.
        let newPrimary = try await PostgresConnection.connect("postgresql://127.0.0.1:\(Self.standbyPort)/payhook?user=\(owner)")
        defer { newPrimary.close() }
        let acknowledged = Set(senders.acknowledgedKeys)
        let stored = Set(try await newPrimary.query("SELECT dedup_key FROM inbound_events").map { try $0.decode("dedup_key", as: String.self) })
        let lost = acknowledged.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged deliveries are missing on the new primary: \(lost.prefix(5))")
        var unprocessed = acknowledged
        let settled = await eventually(timeout: .seconds(60)) {
            guard let rows = try? await newPrimary.query("SELECT dedup_key FROM inbound_events WHERE status = 'processed'") else { return false }
            unprocessed = acknowledged.subtracting(rows.compactMap { try? $0.decode("dedup_key", as: String.self) })
            return unprocessed.isEmpty
        }
        #expect(settled, "\(unprocessed.count) acknowledged deliveries not processed on the new primary: \(unprocessed.prefix(5)); stderr: \(child.standardError.suffix(1500))")
        #expect(child.ended == nil, "payhook ended after the failover: \(String(describing: child.ended))")

        child.send(signal: SIGTERM)
        let ended = await child.wait(timeout: .seconds(30))
        if ended == nil { child.send(signal: SIGKILL) }
    }

    private func pair(_ command: String) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PAYHOOK_PG_PORT"] = String(Self.primaryPort)
        environment["PAYHOOK_PG_STANDBY_PORT"] = String(Self.standbyPort)
        let captured = try await Subprocess.capture([RepositoryPaths.root + "/ops/db-pair", command], environment: environment,
                                                    timeout: .seconds(120))
        guard captured.termination == .exited(0) else {
            throw PairError(description: "ops/db-pair \(command) ended with \(String(describing: captured.termination)): \(captured.standardError.suffix(1500))")
        }
    }

    struct PairError: Error, CustomStringConvertible {
        let description: String
    }

    private func destroyPair() async { try? await pair("destroy") }
}

/// Senders that behave like a provider: each delivery is retried (after 100 ms) until it is
/// answered 2xx, then the next one is sent. Each sender runs on a thread of its own.
final class RetryingSenders: Sendable {
    private struct Acknowledgement {
        let key: String
        let sentAt: ContinuousClock.Instant
        let answeredAt: ContinuousClock.Instant
    }

    private let acknowledgements = Mutex<[Acknowledgement]>([])
    private let failures = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    var acknowledgedKeys: [String] { acknowledgements.withLock { $0.map(\.key) } }
    var acknowledgedCount: Int { acknowledgements.withLock { $0.count } }
    /// Attempts answered other than 2xx, or not answered.
    var failedCount: Int { failures.load(ordering: .relaxed) }

    /// When the first attempt sent after `instant` was answered 2xx.
    func firstAcknowledgement(sentAfter instant: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        acknowledgements.withLock { $0.filter { $0.sentAt > instant }.map(\.answeredAt).min() }
    }

    /// The longest a 2xx took to come back among attempts sent after `instant`.
    func slowestAnswer(after instant: ContinuousClock.Instant) -> Duration {
        acknowledgements.withLock { $0.filter { $0.sentAt > instant }.map { $0.answeredAt - $0.sentAt }.max() ?? .zero }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    func run(port: Int, workers: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    await HTTPTestClient.offPool {
                        while !self.stopped.load(ordering: .relaxed) {
                            let delivery = Sign.adyen()
                            while !self.stopped.load(ordering: .relaxed) {
                                let sentAt = ContinuousClock.now
                                let response = HTTPTestClient.sendBlocking(
                                    port: port, path: delivery.path, headers: delivery.headers, body: delivery.body, timeoutSeconds: 30)
                                if let response, response.isSuccess {
                                    self.acknowledgements.withLock {
                                        $0.append(Acknowledgement(key: delivery.expectedDedupKey, sentAt: sentAt, answeredAt: .now))
                                    }
                                    break
                                }
                                self.failures.add(1, ordering: .relaxed)
                                usleep(100_000)
                            }
                        }
                    }
                }
            }
        }
    }
}
