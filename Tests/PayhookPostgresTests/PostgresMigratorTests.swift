import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

@Suite("Migration file names")
struct MigrationFileNameTests {
    @Test("a well-formed file name gives the version and name", arguments: [
        ("0001_create_jobs.sql", 1, "create_jobs"),
        ("0042_add_index_2.sql", 42, "add_index_2"),
        ("7_x.sql", 7, "x"),
    ])
    func parses(fileName: String, version: Int, name: String) throws {
        let migration = try Migration(fileName: fileName, sql: "SELECT 1")
        #expect(migration.version == version)
        #expect(migration.name == name)
        #expect(migration.fileName == fileName)
    }

    @Test("a malformed file name is a migration error naming the file", arguments: [
        "0001_create_jobs.txt", "create_jobs.sql", "0001.sql", "0001_.sql", "00x1_jobs.sql", "0000_zero.sql",
        "0001_drop jobs.sql", "-001_jobs.sql",
    ])
    func rejects(fileName: String) {
        let error = #expect(throws: PostgresError.self) { try Migration(fileName: fileName, sql: "") }
        #expect(error?.kind == .migration)
        #expect(error?.message.contains(fileName) == true)
    }
}

@Suite("PostgresMigrator", .timeLimit(.minutes(5)))
struct PostgresMigratorTests {
    static func migrations() throws -> [Migration] {
        [
            try Migration(fileName: "0002_add_status.sql", sql: """
                ALTER TABLE widgets ADD COLUMN status text NOT NULL DEFAULT 'new';
                INSERT INTO widgets (name) VALUES ('it''s seeded');
                """),
            try Migration(fileName: "0001_create_widgets.sql", sql: """
                CREATE TABLE widgets (id bigserial PRIMARY KEY, name text NOT NULL);
                CREATE INDEX widgets_name_idx ON widgets (name);
                """),
        ]
    }

    @Test("migrate applies pending migrations in version order, once; a second run applies nothing")
    func migrateTwice() async throws {
        try await TestDatabase.withSchema { conninfo in
            let migrator = PostgresMigrator(conninfo: conninfo, migrations: try Self.migrations())
            #expect(try await migrator.pendingMigrations().map(\.version) == [1, 2])
            let first = try await migrator.migrate()
            #expect(first.map(\.version) == [1, 2])
            let second = try await migrator.migrate()
            #expect(second.isEmpty)
            #expect(try await migrator.pendingMigrations().isEmpty)

            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let rows = try await connection.query("SELECT version, name, length(checksum) AS len FROM schema_migrations ORDER BY version")
            #expect(try rows.map { try $0.decode("name", as: String.self) } == ["create_widgets", "add_status"])
            #expect(try rows.map { try $0.decode("len", as: Int.self) } == [64, 64])
            let widgets = try await connection.query("SELECT name, status FROM widgets")
            #expect(try widgets.rows.first?.decode("status", as: String.self) == "new")

            // A new migration later is the only one pending and applied.
            let more = try Self.migrations() + [try Migration(fileName: "0003_add_color.sql", sql: "ALTER TABLE widgets ADD COLUMN color text")]
            let later = PostgresMigrator(conninfo: conninfo, migrations: more)
            #expect(try await later.pendingMigrations().map(\.version) == [3])
            #expect(try await later.migrate().map(\.version) == [3])
        }
    }

    @Test("two migrators started at once leave one consistent schema, each migration applied once")
    func concurrentMigrators() async throws {
        try await TestDatabase.withSchema { conninfo in
            let migrations = try Self.migrations()
            async let a = PostgresMigrator(conninfo: conninfo, migrations: migrations).migrate()
            async let b = PostgresMigrator(conninfo: conninfo, migrations: migrations).migrate()
            let (appliedByA, appliedByB) = try await (a, b)
            #expect((appliedByA + appliedByB).map(\.version).sorted() == [1, 2])
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            #expect(try await connection.query("SELECT count(*) AS n FROM schema_migrations").rows.first?.decode("n", as: Int.self) == 2)
            #expect(try await connection.query("SELECT count(*) AS n FROM widgets").rows.first?.decode("n", as: Int.self) == 1)
        }
    }

    @Test("an applied migration edited afterwards is reported by file name, and nothing else is applied")
    func editedFile() async throws {
        try await TestDatabase.withSchema { conninfo in
            let original = try Self.migrations()
            try await PostgresMigrator(conninfo: conninfo, migrations: original.filter { $0.version == 1 }).migrate()
            let edited = [
                try Migration(fileName: "0001_create_widgets.sql", sql: "CREATE TABLE widgets (id int8);"),
                try #require(original.first { $0.version == 2 }),
            ]
            let migrator = PostgresMigrator(conninfo: conninfo, migrations: edited)
            let error = try #require(await captureError { try await migrator.migrate() })
            #expect(error.kind == .migration)
            #expect(error.message == "0001_create_widgets.sql was edited after it was applied")
            let pendingError = try #require(await captureError { _ = try await migrator.pendingMigrations() })
            #expect(pendingError.kind == .migration)
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            #expect(try await connection.query("SELECT count(*) AS n FROM schema_migrations").rows.first?.decode("n", as: Int.self) == 1)
        }
    }

    @Test("a failing migration rolls back entirely, is not recorded, and the error names the file")
    func failingMigration() async throws {
        try await TestDatabase.withSchema { conninfo in
            let migrations = try Self.migrations() + [
                try Migration(fileName: "0003_broken.sql", sql: "CREATE TABLE gadgets (id int8); SELECT * FROM missing_table;"),
            ]
            let migrator = PostgresMigrator(conninfo: conninfo, migrations: migrations)
            let error = try #require(await captureError { try await migrator.migrate() })
            #expect(error.kind == .migration)
            #expect(error.sqlState == "42P01")
            #expect(error.message.hasPrefix("0003_broken.sql failed"))
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let versions = try await connection.query("SELECT version FROM schema_migrations ORDER BY version").map { try $0.decode("version", as: Int.self) }
            #expect(versions == [1, 2])
            #expect(try await connection.query("SELECT to_regclass('gadgets') IS NULL AS absent").rows.first?.decode("absent", as: Bool.self) == true)
            #expect(try await migrator.pendingMigrations().map(\.version) == [3])
        }
    }

    @Test("two files with the same version are refused before anything runs")
    func duplicateVersions() async throws {
        try await TestDatabase.withSchema { conninfo in
            let migrations = [
                try Migration(fileName: "0001_a.sql", sql: "CREATE TABLE a (x int)"),
                try Migration(fileName: "0001_b.sql", sql: "CREATE TABLE b (x int)"),
            ]
            let error = try #require(await captureError { try await PostgresMigrator(conninfo: conninfo, migrations: migrations).migrate() })
            #expect(error.kind == .migration)
            #expect(error.message.contains("0001_a.sql") && error.message.contains("0001_b.sql"))
        }
    }
}
