import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// The key invariant, proven on the real binary: a 2xx is sent only after the commit, so
/// nothing acknowledged is lost, whether the process is killed (-9) or stopped (SIGTERM).
@Suite("Nothing acknowledged is lost when payhook dies", .timeLimit(.minutes(4)))
struct CrashSafetyTests {
    static let workers = 16

    /// Every acknowledged dedup key that is not in `inbound_events`.
    static func lost(_ keys: [String], in database: TestDatabase) async throws -> [String] {
        let stored = Set(try await database.query("SELECT dedup_key FROM inbound_events").map { try $0.decode("dedup_key", as: String.self) })
        return keys.filter { !stored.contains($0) }
    }

    @Test("kill -9 in the middle of a delivery stream loses no acknowledged delivery")
    func killNine() async throws {
        let database = try await TestDatabase.empty("crash_kill")
        let (child, port) = try await PayhookBinary.serve(databaseURL: database.url)
        defer { child.removeOutputFiles() }
        let stream = DeliveryStream()
        let sending = Task { await stream.run(port: port, workers: Self.workers) }

        let flowing = await eventually(timeout: .seconds(30)) { stream.acknowledgedCount >= 300 }
        child.send(signal: SIGKILL)
        let ended = await child.wait()
        // Let the workers hit the dead port for a moment before stopping them.
        let failedAtKill = stream.failedCount
        _ = await eventually(timeout: .seconds(5)) { stream.failedCount >= failedAtKill + Self.workers }
        stream.stop()
        await sending.value

        #expect(flowing, "the stream never reached 300 acknowledgements (\(stream.acknowledgedCount)); stderr: \(child.standardError.suffix(1000))")
        #expect(ended == .signaled(SIGKILL))
        #expect(stream.failedCount > 0, "no request was cut off: the kill did not land mid-stream")
        let acknowledged = stream.acknowledgedKeys
        let lost = try await Self.lost(acknowledged, in: database)
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged deliveries are not stored: \(lost.prefix(5))")
    }

    @Test("SIGTERM during a delivery stream exits 0 after answering, and every acknowledged delivery is stored")
    func gracefulTermination() async throws {
        let database = try await TestDatabase.empty("crash_term")
        let (child, port) = try await PayhookBinary.serve(databaseURL: database.url)
        defer { child.removeOutputFiles() }
        let stream = DeliveryStream()
        let sending = Task { await stream.run(port: port, workers: Self.workers) }

        let flowing = await eventually(timeout: .seconds(30)) { stream.acknowledgedCount >= 300 }
        child.send(signal: SIGTERM)
        let ended = await child.wait(timeout: .seconds(30))
        stream.stop()
        await sending.value

        #expect(flowing, "the stream never reached 300 acknowledgements (\(stream.acknowledgedCount))")
        #expect(ended == .exited(0), "payhook did not exit 0 on SIGTERM: \(String(describing: ended)); stderr: \(child.standardError.suffix(1000))")
        #expect(child.standardOutput.contains("\"payhook stopped\""))
        let acknowledged = stream.acknowledgedKeys
        let lost = try await Self.lost(acknowledged, in: database)
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged deliveries are not stored: \(lost.prefix(5))")
    }
}
