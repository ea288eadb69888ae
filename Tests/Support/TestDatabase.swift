import Foundation
package import PayhookPostgres
import Testing
@testable import PayhookIngress

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

    /// Creates the schema and applies every embedded migration to it.
    package static func migrated(_ label: String) async throws -> TestDatabase {
        let base = try baseURL()
        let schema = "t_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        let connection = try await PostgresConnection.connect(base)
        defer { connection.close() }
        _ = try await connection.query("CREATE SCHEMA \(schema)")
        let database = TestDatabase(schema: schema, url: withSearchPath(base, schema: schema))
        let migrator = PostgresMigrator(conninfo: database.url, migrations: try migrations())
        _ = try await SchemaMigrationGate.run { try await migrator.migrate() }
        return database
    }
}
