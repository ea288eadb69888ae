import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookAdmin

/// Rotating an admin credential on a running `payhook serve`: edit the file, send SIGHUP.
@Suite("AdminScope rotation: SIGHUP re-reads the credentials file", .timeLimit(.minutes(5)))
struct AdminScopeRotationTests {
    static let oldToken = "phk_rotation-old-operator", newToken = "phk_rotation-new-operator"

    static func line(_ name: String, _ token: String, _ scope: AdminScope = .operator) -> String {
        AdminCredential(name: name, scope: scope, token: token).fileLine
    }

    /// The admin port from the `"payhook serving"` line's `admin_listen`.
    static func adminPort(in output: String) -> Int? {
        for line in output.split(separator: "\n") where line.contains("\"payhook serving\"") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let listen = object["admin_listen"] as? String, let colon = listen.lastIndex(of: ":") else { continue }
            return Int(listen[listen.index(after: colon)...])
        }
        return nil
    }

    @Test("two operator credentials at once; after one is removed and SIGHUP sent it gets 401, the other keeps working, and a request it started before completes; a broken file keeps the old set")
    func rotationWithoutRestart() async throws {
        let database = try await TestDatabase.migrated("admin_rotation")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("payhook-rotation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("credentials").path
        try (Self.line("ops-old", Self.oldToken) + "\n" + Self.line("ops-new", Self.newToken) + "\n").write(toFile: file, atomically: true, encoding: .utf8)

        let (child, _) = try await PayhookBinary.serve(databaseURL: database.url, environment: ["PAYHOOK_ADMIN_CREDENTIALS_FILE": file])
        defer { child.send(signal: SIGKILL) }
        let port = try #require(Self.adminPort(in: child.standardOutput), "no admin_listen in \(child.standardOutput.suffix(500))")
        func metricsStatus(_ token: String) async -> Int? {
            await HTTPTestClient.send(port: port, method: "GET", path: "/metrics", headers: [("Authorization", "Bearer \(token)")])?.status
        }
        #expect(await metricsStatus(Self.oldToken) == 200)
        #expect(await metricsStatus(Self.newToken) == 200)

        // A request in flight with the old credential: its audit row waits behind a lock this
        // test holds, so it is certainly still running when the credential goes.
        let locker = try await PostgresConnection.connect(database.url)
        defer { locker.close() }
        _ = try await locker.query("BEGIN")
        _ = try await locker.query("LOCK TABLE audit_log IN EXCLUSIVE MODE")
        let inFlight = Task {
            await HTTPTestClient.send(port: port, path: "/v1/orders",
                                      headers: [("Authorization", "Bearer \(Self.oldToken)"), ("Content-Type", "application/json")],
                                      body: Array(FulfillmentHarness.registration("order-rotation").utf8), timeoutSeconds: 60)
        }
        let waiting = await eventually(timeout: .seconds(30)) {
            (try? await database.int(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO audit_log%'")) ?? 0 > 0
        }
        try #require(waiting, "the order registration never reached the audit insert")

        try (Self.line("ops-new", Self.newToken) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        child.send(signal: SIGHUP)
        #expect(await eventually(timeout: .seconds(20)) { await metricsStatus(Self.oldToken) == 401 }, "the removed credential still works")
        #expect(await metricsStatus(Self.newToken) == 200)
        #expect(child.ended == nil, "SIGHUP must not end the process")

        _ = try await locker.query("COMMIT")
        let finished = await inFlight.value
        #expect(finished?.status == 201, "the in-flight request: \(String(describing: finished))")
        #expect(try await database.string("SELECT actor AS v FROM audit_log WHERE action = 'order.register'") == "ops-old",
                "a request is done with the credential it started with")

        // A broken file: the old set stays, the failure is logged and counted.
        try "ops-new operator sha256:nothex\n".write(toFile: file, atomically: true, encoding: .utf8)
        child.send(signal: SIGHUP)
        #expect(await eventually(timeout: .seconds(20)) { child.standardOutput.contains("NOT reloaded") })
        #expect(await metricsStatus(Self.newToken) == 200)
        let scrape = await HTTPTestClient.send(port: port, method: "GET", path: "/metrics", headers: [("Authorization", "Bearer \(Self.newToken)")])
        #expect(scrape?.text.contains(#"payhook_admin_credentials_reloads_total{outcome="failed"} 1"#) == true)
        #expect(scrape?.text.contains(#"payhook_admin_credentials_reloads_total{outcome="reloaded"} 1"#) == true)
        #expect(scrape?.text.contains("payhook_admin_credentials_stale 1") == true, "the alert's gauge says the file is not in force")
        #expect(!child.standardOutput.contains("nothex"), "the log names the line, never its contents")

        child.send(signal: SIGTERM)
        #expect(await child.wait() == .exited(0))
    }
}
