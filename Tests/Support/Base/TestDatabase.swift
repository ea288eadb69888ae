import Foundation
package import PayhookPostgres
import Testing

/// A fresh, migrated schema in the test PostgreSQL for one suite.
///
/// `ops/test` exports `DATABASE_URL`; each suite gets its own schema (through libpq's `options`
/// search_path), so suites run in parallel without seeing each other's rows. Tests fail, loudly,
/// without a database: database behaviour is never mocked.
package struct TestDatabase: Sendable {
    package let schema: String
    /// Conninfo whose sessions see only this schema.
    package let url: String

    package init(schema: String, url: String) {
        self.schema = schema
        self.url = url
    }

    package static func baseURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
            Issue.record("DATABASE_URL is not set: run the tests through ops/test, which starts PostgreSQL")
            throw MissingDatabase()
        }
        return url
    }

    package struct MissingDatabase: Error {}

    package static func withSearchPath(_ url: String, schema: String) -> String {
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        }
        return url + " options='-csearch_path=\(schema)'"
    }

    /// Every migration the app embeds, compiled into this module from the same
    /// `sql/migrations` files by the same build plugin.
    package static func migrations() throws -> [Migration] {
        try EmbeddedMigrations.files.map { try Migration(fileName: $0.name, sql: $0.sql) }
    }

    /// Runs `body` with the conninfo of a new schema (first in `search_path` for every session
    /// opened with it), migrated when asked, and drops the schema afterwards.
    ///
    /// - Parameter server: the server's conninfo; `DATABASE_URL` by default. Restart tests pass
    ///   their own `DedicatedCluster`, because restarting the shared server would break every
    ///   other suite running meanwhile.
    package static func withSchema(on server: String? = nil, migrated: Bool = false,
                                   _ body: (_ conninfo: String) async throws -> Void) async throws {
        let base = try server ?? baseURL()
        let database = try await empty("test", on: base)
        do {
            if migrated { try await database.migrate() }
            try await body(database.url)
        } catch {
            await dropSchema(database.schema, base: base)
            throw error
        }
        await dropSchema(database.schema, base: base)
    }

    private static func dropSchema(_ schema: String, base: String) async {
        // A restart test may leave the server briefly unreachable; a leftover schema is harmless.
        guard let connection = try? await PostgresConnection.connect(base) else { return }
        try? await connection.execute("DROP SCHEMA \(schema) CASCADE")
        connection.close()
    }

    /// A schema with nothing in it (no migrations applied) on `server`, `DATABASE_URL` by default.
    package static func empty(_ label: String, on server: String? = nil) async throws -> TestDatabase {
        let base = try server ?? baseURL()
        let schema = "t_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        let connection = try await PostgresConnection.connect(base)
        defer { connection.close() }
        _ = try await connection.query("CREATE SCHEMA \(schema)")
        return TestDatabase(schema: schema, url: withSearchPath(base, schema: schema))
    }

    /// Applies every embedded migration to this schema.
    package func migrate() async throws {
        let migrator = PostgresMigrator(conninfo: url, migrations: try Self.migrations())
        _ = try await SchemaMigrationGate.run { try await migrator.migrate() }
    }

    /// One statement on a connection of its own (closed afterwards).
    @discardableResult
    package func query(_ sql: String, _ binds: [PostgresValue] = []) async throws -> PostgresRows {
        let connection = try await PostgresConnection.connect(url)
        defer { connection.close() }
        return try await connection.query(sql, binds)
    }

    /// Creates the schema and applies every embedded migration to it.
    package static func migrated(_ label: String) async throws -> TestDatabase {
        let database = try await empty(label)
        try await database.migrate()
        return database
    }
}
