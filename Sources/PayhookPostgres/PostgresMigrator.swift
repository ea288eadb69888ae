/// Applies `Migration`s in version order, each once, across any number of processes.
///
/// Why an advisory lock: several payhook processes may start at once; `pg_advisory_lock` on a
/// dedicated session makes them take turns, and whoever comes second finds nothing pending.
/// Each migration runs in its own transaction together with its `schema_migrations` row, so
/// a failure leaves the schema at the previous version. Migrations must therefore be
/// transaction-safe (no `CREATE INDEX CONCURRENTLY`).
///
/// Applied files are fingerprinted (SHA-256 of the SQL, computed by the server); a file edited
/// after it was applied stops both `migrate()` and `pendingMigrations()` with an error.
///
/// `schema_migrations` lives in the session's `search_path` (normally `public`).
public struct PostgresMigrator: Sendable {
    /// First key of the two-key `pg_advisory_lock(int4, int4)`: the ASCII bytes of "phmg"
    /// (payhook migrations); the second is the hash of the schema being migrated.
    static let advisoryLockClass: Int64 = 0x70_68_6D_67

    private let conninfo: String
    private let migrations: [Migration]

    /// Creates a migrator; nothing is contacted until `migrate()` or `pendingMigrations()`.
    public init(conninfo: String, migrations: [Migration]) {
        self.conninfo = conninfo
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Applies every pending migration under the advisory lock, in version order.
    ///
    /// - Parameter onApplied: called after each migration commits, with how long it took
    ///   (its SQL and its `schema_migrations` row, commit included), so a long migration on a
    ///   populated database reports as it goes.
    /// - Returns: the migrations applied by this call (empty when the schema was current).
    /// - Throws: `.migration` for duplicate versions, an edited applied file, or a failing
    ///   migration (message names the file, plus the server's primary message);
    ///   connection errors as they come.
    @discardableResult
    public func migrate(onApplied: (Migration, Duration) -> Void = { _, _ in }) async throws(PostgresError) -> [Migration] {
        try checkDuplicateVersions()
        let connection = try await PostgresConnection.connect(conninfo)
        defer { connection.close() }
        // Session-level lock; closing the connection releases it even if unlock is never reached.
        // One lock per schema: instances migrating the same schema take turns; different schemas
        // (tests, several deployments sharing a server) never wait for each other.
        try await connection.query("SELECT pg_advisory_lock($1::int4, hashtext(coalesce(current_schema(), '')))", [.int(Self.advisoryLockClass)])
        try await connection.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version int PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let pending = try await pending(on: connection, tableExists: true)
        var applied = [Migration]()
        for migration in pending {
            let started = ContinuousClock.now
            do {
                try await connection.transaction { connection in
                    try await connection.execute(migration.sql)
                    try await connection.query("""
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES ($1, $2, encode(sha256(convert_to($3, 'UTF8')), 'hex'))
                        """, [.int(Int64(migration.version)), .text(migration.name), .text(migration.sql)])
                }
            } catch let error as PostgresError where error.kind == .connectionLost {
                throw error  // retryable as it is; the migration rolled back with the session
            } catch let error as PostgresError {
                throw PostgresError(kind: .migration, sqlState: error.sqlState,
                                    message: "\(migration.fileName) failed: \(error.message)",
                                    constraint: error.constraint)
            } catch {
                throw PostgresError(kind: .migration, message: "\(migration.fileName) failed")
            }
            onApplied(migration, ContinuousClock.now - started)
            applied.append(migration)
        }
        try await connection.query("SELECT pg_advisory_unlock($1::int4, hashtext(coalesce(current_schema(), '')))", [.int(Self.advisoryLockClass)])
        return applied
    }

    /// The migrations not yet applied, in order; for `/readyz` and `payhook migrate --dry-run`.
    ///
    /// Takes no lock and changes nothing.
    /// - Throws: `.migration` when an applied file was edited or versions repeat; connection errors.
    public func pendingMigrations() async throws(PostgresError) -> [Migration] {
        try checkDuplicateVersions()
        let connection = try await PostgresConnection.connect(conninfo)
        defer { connection.close() }
        let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
        let tableExists = try exists.rows.first?.decode("present", as: Bool.self) ?? false
        return try await pending(on: connection, tableExists: tableExists)
    }

    /// Compares the files with `schema_migrations` and returns those not applied.
    private func pending(on connection: PostgresConnection, tableExists: Bool) async throws(PostgresError) -> [Migration] {
        guard tableExists else { return migrations }
        var appliedChecksums = [Int: String]()
        for row in try await connection.query("SELECT version, checksum FROM schema_migrations") {
            appliedChecksums[try row.decode("version", as: Int.self)] = try row.decode("checksum", as: String.self)
        }
        var pending = [Migration]()
        for migration in migrations {
            guard let applied = appliedChecksums[migration.version] else {
                pending.append(migration)
                continue
            }
            let current = try await connection.query(
                "SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex') AS checksum", [.text(migration.sql)])
            let checksum = try current.rows.first?.decode("checksum", as: String.self)
            if checksum != applied {
                throw PostgresError(kind: .migration, message: "\(migration.fileName) was edited after it was applied")
            }
        }
        return pending
    }

    private func checkDuplicateVersions() throws(PostgresError) {
        var seen = [Int: String]()
        for migration in migrations {
            if let other = seen[migration.version] {
                throw PostgresError(kind: .migration,
                                    message: "\(other) and \(migration.fileName) share version \(migration.version)")
            }
            seen[migration.version] = migration.fileName
        }
    }
}
