import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PayhookPostgres
import PayhookTestSupport
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
    /// - Parameter server: the server's conninfo; `DATABASE_URL` by default. Restart tests pass
    ///   their own `DedicatedCluster`, because restarting the shared server would break every
    ///   other suite running meanwhile.
    static func withSchema(on server: String? = nil, _ body: (_ conninfo: String) async throws -> Void) async throws {
        let base = try server ?? url()
        let schema = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let admin = try await PostgresConnection.connect(base)
        defer { admin.close() }
        try await admin.execute("CREATE SCHEMA \(schema)")
        do {
            try await body(conninfo(base, searchPath: schema))
        } catch {
            await dropSchema(schema, base: base)
            throw error
        }
        await dropSchema(schema, base: base)
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

}

/// Collects a listener's notifications so tests can wait for them with a deadline.
final class NotificationRecorder: Sendable {
    private final class Storage: Sendable {
        let items = Mutex<[PostgresNotification]>([])
    }
    private let storage = Storage()
    private let consumer: Task<Void, Never>
    /// Opens when the listener's stream has finished.
    let finished = Latch()

    init(_ listener: PostgresListener) {
        let stream = listener.notifications
        let storage = self.storage
        let finished = self.finished
        consumer = Task {
            for await notification in stream { storage.items.withLock { $0.append(notification) } }
            finished.open()
        }
    }

    var all: [PostgresNotification] { storage.items.withLock { $0 } }

    func count(channel: String) -> Int { all.filter { $0.channel == channel }.count }

    func cancel() { consumer.cancel() }
}
