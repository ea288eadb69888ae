/// Applies `Migration`s in version order, each once, across any number of processes.
///
/// Why an advisory lock: several payhook processes may start at once; `pg_advisory_lock` on a
/// dedicated session makes them take turns, and whoever comes second finds nothing pending.
/// Behind a transaction-mode pooler a session lock would stay on whichever server session took
/// it, so there each migration's transaction takes `pg_advisory_xact_lock` instead and checks
/// again, under the lock, that the migration is still pending.
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
    private let pooling: PostgresPooling

    /// Creates a migrator; nothing is contacted until `migrate()` or `pendingMigrations()`.
    /// - Parameter pooling: `.transaction` when `conninfo` leads to a transaction-mode pooler:
    ///   then no lock outlives a transaction.
    public init(conninfo: String, migrations: [Migration], pooling: PostgresPooling = .session) {
        self.conninfo = conninfo
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.pooling = pooling
    }

    /// Two keys: this class, and the schema being migrated.
    private static let lockKeys = "$1::int4, hashtext(coalesce(current_schema(), ''))"

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
        let connection = try await PostgresConnection.connect(conninfo, pooling: pooling)
        defer { connection.close() }
        let sessionLock = pooling == .session
        let lockClass: [PostgresValue] = [.int(Self.advisoryLockClass)]
        let createTable = """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version int PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        if sessionLock {
            // Session-level lock; closing the connection releases it even if unlock is never reached.
            // One lock per schema: instances migrating the same schema take turns; different schemas
            // (tests, several deployments sharing a server) never wait for each other.
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKeys))", lockClass)
            try await connection.execute(createTable)
        } else {
            // Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog; the lock orders them.
            try await connection.execute("BEGIN")
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKeys))", lockClass)
            try await connection.execute(createTable)
            try await connection.execute("COMMIT")
        }
        let pending = try await pending(on: connection, tableExists: true)
        var applied = [Migration]()
        for migration in pending {
            let started = ContinuousClock.now
            do {
                let appliedHere = try await connection.transaction { connection in
                    if !sessionLock {
                        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKeys))", lockClass)
                        // Another process may have applied it while this one waited for the lock.
                        let done = try await connection.query(
                            "SELECT 1 FROM schema_migrations WHERE version = $1", [.int(Int64(migration.version))])
                        if !done.rows.isEmpty { return false }
                    }
                    try await connection.execute(migration.sql)
                    try await connection.query("""
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES ($1, $2, encode(sha256(convert_to($3, 'UTF8')), 'hex'))
                        """, [.int(Int64(migration.version)), .text(migration.name), .text(migration.sql)])
                    return true
                }
                guard appliedHere else { continue }
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
        if sessionLock { try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKeys))", lockClass) }
        return applied
    }

    /// The migrations not yet applied, in order; for `/readyz` and `payhook migrate --dry-run`.
    ///
    /// Takes no lock and changes nothing.
    /// - Throws: `.migration` when an applied file was edited or versions repeat; connection errors.
    public func pendingMigrations() async throws(PostgresError) -> [Migration] {
        try checkDuplicateVersions()
        let connection = try await PostgresConnection.connect(conninfo, pooling: pooling)
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
