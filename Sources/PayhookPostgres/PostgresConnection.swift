import Dispatch
import Synchronization

/// One PostgreSQL session.
///
/// Why a class with its own queue: libpq calls block, and Swift's cooperative pool has one
/// thread per core (two here), so every libpq call runs on this connection's serial
/// `DispatchQueue` and the calling task waits on a continuation instead of a thread. A task
/// running on a ``DedicatedThreadExecutor`` (a processor worker) owns its thread, so there the
/// call runs inline and blocks it, without the two thread hand-offs.
///
/// Threading: safe to share between tasks, but a session is sequential: concurrent calls on
/// one connection are queued, and statements from different tasks would interleave inside
/// one transaction. Give each task its own connection (see `PostgresPool`).
///
/// A connection never traps on database failures; every failure is a `PostgresError`.
public final class PostgresConnection: Sendable {
    let handle: LibpqConnection
    /// Sticky: once the session is observed dead (or closed, or a ROLLBACK failed) it stays broken.
    private let broken = Atomic<Bool>(false)
    /// Whether the last command left the session inside a transaction block.
    private let inTransaction = Atomic<Bool>(false)

    private init(handle: LibpqConnection) {
        self.handle = handle
    }

    /// Opens a session, with `DateStyle=ISO`, `TimeZone=UTC` and (unless `pooling` is
    /// `.transaction`, where a pooler does not keep it) hex `bytea` output.
    ///
    /// - Parameter conninfo: a libpq URI (`postgresql:///payhook?host=/run/pg`) or `key=value`
    ///   string, parsed by libpq;
    ///   `PostgresConnectionDefaults` fill in what it leaves unset (a short `connect_timeout`,
    ///   TCP keepalives).
    /// - Parameter callDeadline: how long any one call (statement, COPY, COMMIT) may wait for
    ///   the server; past it the call fails with `.connectionLost` and the connection is broken,
    ///   so a hung server cannot hold a caller. `nil`: no limit (migrations, long maintenance).
    /// - Throws: `.connectionFailed` (retryable) when the server cannot be reached or refuses.
    /// - Parameter pooling: `.transaction` when `conninfo` leads to a transaction-mode pooler;
    ///   see `PostgresPooling`.
    public static func connect(_ conninfo: String, pooling: PostgresPooling = .session,
                               callDeadline: Duration? = nil) async throws(PostgresError) -> PostgresConnection {
        let handle = LibpqConnection(label: "payhook.postgres.connection", pooling: pooling)
        try await onConnectionQueue(handle) { handle.open(conninfo, callDeadline: callDeadline) }.get()
        return PostgresConnection(handle: handle)
    }

    /// Runs one statement with `$1`, `$2`, … binds and returns its rows.
    ///
    /// Values never become SQL text; see `PostgresValue`. Results come back in text format and
    /// are fully copied before this returns. Only one statement per call.
    /// - Throws: a `PostgresError` classified by SQLSTATE; `.connectionLost` marks the
    ///   connection broken.
    @discardableResult
    public func query(_ sql: String, _ binds: [PostgresValue] = []) async throws(PostgresError) -> PostgresRows {
        var encoded = [PostgresValue.Encoded]()
        encoded.reserveCapacity(binds.count)
        for bind in binds { encoded.append(try bind.encoded()) }
        let binds = encoded
        return try await onQueue { handle in handle.query(sql, binds) }
    }

    /// Streams `rows` into a table: `sql` is `COPY table (columns) FROM STDIN (FORMAT binary)`
    /// with as many columns as `rows.columnCount`, in the order the values were appended.
    ///
    /// Outside a transaction block the COPY is one implicit transaction: every row is
    /// committed, or none (a refused row, such as a unique violation, stores nothing).
    /// Row and statement triggers fire as for an INSERT.
    /// - Returns: the number of rows stored.
    /// - Throws: `.other` for an incomplete last row or a statement that is not a COPY FROM
    ///   STDIN (one that does not start with COPY is refused before it runs; a COPY TO STDOUT
    ///   runs, and its session is discarded), otherwise the server's `PostgresError` (e.g.
    ///   `.uniqueViolation` with its constraint).
    @discardableResult
    public func copy(_ sql: String, _ rows: PostgresCopyRows) async throws(PostgresError) -> Int {
        let data = try rows.streamWithoutTrailer()
        let result = try await onQueue { handle in handle.copy(sql, data, trailer: PostgresCopyRows.trailer) }
        return result.affectedRows
    }

    /// Runs SQL through the simple protocol: several `;`-separated statements, no binds.
    ///
    /// For migrations and session commands. Never build the string from values; use `query`.
    /// - Throws: the first failing statement's error; earlier statements in the string are
    ///   rolled back with it unless they ran in their own transactions.
    public func execute(_ sql: String) async throws(PostgresError) {
        _ = try await onQueue { handle in handle.execute(sql) }
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`.
    ///
    /// If `body` throws, the transaction is rolled back and the error rethrown; if that
    /// ROLLBACK fails too, the connection is marked broken so a pool discards it.
    /// Do not run statements on this connection from other tasks meanwhile.
    /// - Throws: `body`'s error, the BEGIN/COMMIT error, or `.other` with SQLSTATE 25P02 when
    ///   COMMIT turned into a rollback because a statement failed and `body` swallowed the error.
    @discardableResult
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await execute("BEGIN")
        let value: T
        do {
            value = try await body(self)
        } catch {
            do {
                try await execute("ROLLBACK")
            } catch {
                markBroken()
            }
            throw error
        }
        let commit = try await onQueue { handle in handle.execute("COMMIT") }
        if commit.commandTag == "ROLLBACK" {
            throw PostgresError(kind: .other, sqlState: "25P02",
                                message: "transaction was rolled back at COMMIT because a statement in it failed")
        }
        return value
    }

    /// True once the session is known to be unusable: the server went away, libpq reported
    /// the connection bad, a ROLLBACK failed, or `close()` was called.
    ///
    /// A connection whose server died while it sat idle reports false until it is used.
    public var isBroken: Bool { broken.load(ordering: .acquiring) }

    /// Whether the session was left inside a transaction block by the last command.
    var isInTransaction: Bool { inTransaction.load(ordering: .acquiring) }

    /// Closes the session after any queued work; later calls throw `.connectionLost`.
    /// Non-blocking; safe to call more than once.
    public func close() {
        markBroken()
        let handle = self.handle
        handle.queue.async { handle.finish() }
    }

    func markBroken() {
        broken.store(true, ordering: .releasing)
    }

    /// Reads any pending input without blocking to notice a server that went away while the
    /// connection was idle; used by the pool at checkout.
    func checkIdleHealth() async -> Bool {
        let handle = self.handle
        let healthy = await Self.onConnectionQueue(handle) { handle.checkIdleHealth() }
        if !healthy { markBroken() }
        return healthy
    }

    /// Runs `work` on the connection's queue and records the session state it leaves behind.
    private func onQueue(_ work: @escaping @Sendable (LibpqConnection) -> Result<PostgresRows, PostgresError>)
        async throws(PostgresError) -> PostgresRows
    {
        let handle = self.handle
        let result = await Self.onConnectionQueue(handle) {
            let result = handle.withCallDeadline { work(handle) }
            if !handle.isUsable { self.markBroken() }
            if case .failure(let error) = result, error.kind == .connectionLost { self.markBroken() }
            self.inTransaction.store(handle.isInTransaction, ordering: .releasing)
            return result
        }
        return try result.get()
    }

    /// Runs `work` on the connection's serial queue, which gives libpq one caller at a time.
    ///
    /// On a ``DedicatedThreadExecutor``'s thread the work runs right there (`sync` on an idle
    /// serial queue runs the block on the calling thread): that thread may block, and skipping
    /// the two hand-offs is the point of it. Anywhere else the calling task suspends and the
    /// work runs on a dispatch thread, so a blocking libpq call never holds a cooperative thread.
    private static func onConnectionQueue<T: Sendable>(_ handle: LibpqConnection,
                                                       _ work: @escaping @Sendable () -> T) async -> T {
        if DedicatedThreadExecutor.isCurrentThreadDedicated {
            return handle.queue.sync(execute: work)
        }
        return await withCheckedContinuation { continuation in
            handle.queue.async { continuation.resume(returning: work()) }
        }
    }
}
