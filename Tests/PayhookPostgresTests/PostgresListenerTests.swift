import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

@Suite("PostgresListener", .timeLimit(.minutes(5)))
struct PostgresListenerTests {
    @Test("NOTIFY on a listened channel is delivered with its payload, after the ready signal")
    func deliversNotifications() async throws {
        try await TestDatabase.withSchema { conninfo in
            let channel = "jobs_\(UInt32.random(in: 0...UInt32.max))"
            let listener = PostgresListener.start(conninfo: conninfo, channels: [channel])
            defer { listener.stop() }
            let recorder = NotificationRecorder(listener)
            defer { recorder.cancel() }
            #expect(await eventually { recorder.count(channel: "") >= 1 }, "listener never signalled readiness")

            let sender = try await PostgresConnection.connect(conninfo)
            defer { sender.close() }
            try await sender.query("SELECT pg_notify($1, $2)", [.text(channel), .text("job 42 'quoted'")])
            try await sender.query("SELECT pg_notify($1, $2)", [.text("not_listened_\(channel)"), .text("ignored")])
            try await sender.query("SELECT pg_notify($1, $2)", [.text(channel), .text("")])
            #expect(await eventually { recorder.count(channel: channel) == 2 })
            let payloads = recorder.all.filter { $0.channel == channel }.map(\.payload)
            #expect(payloads == ["job 42 'quoted'", ""])
            #expect(recorder.all.allSatisfy { $0.channel == channel || $0.channel == "" })
        }
    }

    @Test("channel names with quotes and spaces are quoted as identifiers, not spliced")
    func hostileChannelName() async throws {
        try await TestDatabase.withSchema { conninfo in
            let channel = "weird \"chan\"; DROP TABLE x; --"
            let listener = PostgresListener.start(conninfo: conninfo, channels: [channel])
            defer { listener.stop() }
            let recorder = NotificationRecorder(listener)
            defer { recorder.cancel() }
            #expect(await eventually { recorder.count(channel: "") >= 1 })
            let sender = try await PostgresConnection.connect(conninfo)
            defer { sender.close() }
            try await sender.query("SELECT pg_notify($1, 'hi')", [.text(channel)])
            #expect(await eventually { recorder.count(channel: channel) == 1 })
        }
    }

    @Test("a listener whose session is killed reconnects, signals with channel \"\", and keeps delivering")
    func reconnectsAfterKill() async throws {
        try await TestDatabase.withSchema { conninfo in
            let channel = "kill_\(UInt32.random(in: 0...UInt32.max))"
            let listener = PostgresListener.start(conninfo: conninfo, channels: [channel])
            defer { listener.stop() }
            let recorder = NotificationRecorder(listener)
            defer { recorder.cancel() }
            #expect(await eventually { recorder.count(channel: "") == 1 })

            let admin = try await PostgresConnection.connect(conninfo)
            defer { admin.close() }
            try await admin.query("""
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%'
                """, [.text(channel)])
            #expect(await eventually { recorder.count(channel: "") == 2 }, "no reconnect signal")
            try await admin.query("SELECT pg_notify($1, 'after')", [.text(channel)])
            #expect(await eventually { recorder.all.contains(PostgresNotification(channel: channel, payload: "after")) })
        }
    }

    @Test("stop closes the listening session and finishes the notification stream; a second stop is harmless")
    func stopClosesSessionAndFinishesStream() async throws {
        try await TestDatabase.withSchema { conninfo in
            let channel = "stop_\(UInt32.random(in: 0...UInt32.max))"
            // No keep-alive query (callDeadline nil), so the session's last statement stays its LISTEN.
            let listener = PostgresListener.start(conninfo: conninfo, channels: [channel], callDeadline: nil)
            let recorder = NotificationRecorder(listener)
            defer { recorder.cancel() }
            #expect(await eventually { recorder.count(channel: "") == 1 }, "listener never signalled readiness")

            let admin = try await PostgresConnection.connect(conninfo)
            defer { admin.close() }
            let listeningSessions = { () async throws -> Int64 in
                try await admin.query("""
                    SELECT count(*) AS n FROM pg_stat_activity
                    WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%'
                    """, [.text(channel)]).rows[0].decode("n")
            }
            #expect(try await listeningSessions() == 1)

            listener.stop()
            listener.stop()
            await recorder.finished.wait()
            #expect(await eventually { (try? await listeningSessions()) == 0 }, "the LISTEN session outlived stop")
            try await admin.query("SELECT pg_notify($1, 'after stop')", [.text(channel)])
            #expect(recorder.all == [PostgresNotification(channel: "", payload: "")])
        }
    }
}
