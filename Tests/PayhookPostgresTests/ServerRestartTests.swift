import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

/// Stops and starts a cluster of each test's own (`DedicatedCluster`), never the shared server.
@Suite("Surviving a server restart", .timeLimit(.minutes(5)))
struct ServerRestartTests {
    @Test("the pool keeps working across a server restart without being recreated")
    func poolSurvivesRestart() async throws {
        let cluster = try await DedicatedCluster.start(port: 54341)
        try await cluster.whileRunning {
            try await TestDatabase.withSchema(on: cluster.url) { conninfo in
                let pool = PostgresPool(conninfo: conninfo, maxConnections: 2, acquireTimeout: .seconds(2))
                try await pool.query("CREATE TABLE marks (id int8 PRIMARY KEY)")
                try await pool.query("INSERT INTO marks VALUES (1)")
                #expect(pool.statistics.idle == 1)

                try await cluster.stop()
                do {
                    try await pool.query("SELECT 1")
                    Issue.record("a query succeeded while the server was stopped")
                } catch let error as PostgresError {
                    #expect(error.isRetryable, "\(error)")
                }
                try await cluster.restart()

                // Right after the restart a query may still fail (retryably) or succeed; it must
                // succeed soon, through the same pool.
                var lastError: PostgresError?
                let recovered = await eventually(timeout: .seconds(20)) {
                    do {
                        try await pool.query("INSERT INTO marks VALUES (2) ON CONFLICT DO NOTHING")
                        return true
                    } catch let error as PostgresError {
                        lastError = error
                        #expect(error.isRetryable, "\(error)")
                        return false
                    } catch {
                        Issue.record("unexpected error \(error)")
                        return false
                    }
                }
                #expect(recovered, "pool did not recover: \(String(describing: lastError))")
                let ids = try await pool.query("SELECT id FROM marks ORDER BY id").map { try $0.decode("id", as: Int.self) }
                #expect(ids == [1, 2])
                #expect(pool.statistics.open <= 2)
                await pool.close()
            }
        }
    }

    @Test("the listener reconnects after a server restart, signals with channel \"\", and delivers again")
    func listenerSurvivesRestart() async throws {
        let cluster = try await DedicatedCluster.start(port: 54342)
        try await cluster.whileRunning {
            try await TestDatabase.withSchema(on: cluster.url) { conninfo in
                let channel = "restart_\(UInt32.random(in: 0...UInt32.max))"
                let listener = PostgresListener.start(conninfo: conninfo, channels: [channel])
                defer { listener.stop() }
                let recorder = NotificationRecorder(listener)
                defer { recorder.cancel() }
                #expect(await eventually { recorder.count(channel: "") == 1 })

                try await cluster.stop()
                try await cluster.restart()

                #expect(await eventually(timeout: .seconds(20)) { recorder.count(channel: "") == 2 }, "no reconnect signal")
                let sender = try await PostgresConnection.connect(conninfo)
                defer { sender.close() }
                try await sender.query("SELECT pg_notify($1, 'back')", [.text(channel)])
                #expect(await eventually { recorder.all.contains(PostgresNotification(channel: channel, payload: "back")) })
            }
        }
    }
}
