import CLibPQ
import Dispatch
import PayhookCrypto

/// The single owner of one `PGconn`, and the only code that calls libpq on it.
///
/// `@unchecked Sendable` invariant: `pointer` and `poisoned` are read and written only on
/// `queue` (a serial queue, so libpq sees one caller at a time), except in `deinit`, which runs
/// when no queue work can still reference the object. Every method below must be called on
/// `queue`; `PostgresConnection` is the only caller and always hops there first.
///
/// Why one long file: that invariant is checked by reading, so every call that touches the
/// `PGconn` stays in this file, beside the queue that guards it.
final class LibpqConnection: @unchecked Sendable {
    /// Serial queue that owns the `PGconn`. Blocking libpq calls run here, never on Swift's
    /// cooperative pool; serial queues target GCD's overcommitting pool, so a blocked call
    /// (a lock wait, a slow query) gets its own thread instead of starving other work.
    let queue: DispatchQueue
    private var pointer: OpaquePointer?
    /// Set when the session is left in a state this module cannot use: a COPY it did not ask
    /// for, or a FATAL message that arrived while idle (the server is ending the session, and
    /// the socket's EOF may not be readable yet).
    private var poisoned = false
    /// Statements prepared on this session, by SQL text and parameter types. Parsing and
    /// planning a statement once per session instead of once per call is a large share of the
    /// server's work for the small, repeated statements payhook runs (ingest batches, processing).
    private var prepared: [String: String] = [:]
    /// Names whose statement failed with "cached plan must not change result type" and may
    /// still exist on the server: deallocated before the name is prepared again.
    private var invalidated: Set<String> = []
    /// Past this many, further statements run unprepared, so generated SQL cannot grow the
    /// server's per-session memory without bound.
    static let preparedLimit = 512
    /// `.transaction`: the server session may change between transactions, so nothing is
    /// prepared by name (docs/decisions/0010-statement-names-and-transaction-pooling.md).
    private let pooling: PostgresPooling

    init(label: String, pooling: PostgresPooling = .session) {
        queue = DispatchQueue(label: label)
        self.pooling = pooling
    }

    deinit {
        if let pointer { PQfinish(pointer) }
    }

    /// How long one call may wait for the server before the session is given up; `nil` for
    /// no limit. Set once, by `open`.
    private(set) var callDeadline: Duration?

    /// Opens the session. On queue.
    func open(_ conninfo: String, callDeadline: Duration? = nil) -> Result<Void, PostgresError> {
        self.callDeadline = callDeadline
        switch Libpq.connect(conninfo, pooling: pooling, callDeadline: callDeadline) {
        case .success(let connection):
            guard let pointer = connection.take() else {
                return .failure(PostgresError(kind: .connectionFailed, message: "libpq returned no connection"))
            }
            self.pointer = pointer
            prepared = [:]
            invalidated = []
            // libpq hands a message that arrives outside a command to the notice receiver.
            // `self` outlives the PGconn (it finishes it), so an unretained pointer is safe.
            PQsetNoticeReceiver(pointer, { argument, result in
                guard let argument, let result,
                      let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))),
                      String(cString: severity) == "FATAL" || String(cString: severity) == "PANIC"
                else { return }
                Unmanaged<LibpqConnection>.fromOpaque(argument).takeUnretainedValue().poisoned = true
            }, Unmanaged.passUnretained(self).toOpaque())
            return .success(())
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Runs `work` (a call of this class) under `callDeadline`. When the deadline passes, the
    /// socket is shut down, so `work` returns at once; the session is then poisoned, and a
    /// failure is reported as `deadlineExceeded`. On queue.
    func withCallDeadline(_ work: () -> Result<PostgresRows, PostgresError>) -> Result<PostgresRows, PostgresError> {
        guard let pointer, let callDeadline else { return work() }
        let (result, expired) = Libpq.withDeadline(callDeadline, pointer, work)
        guard expired else { return result }
        poisoned = true
        if case .failure = result { return .failure(.deadlineExceeded(callDeadline)) }
        return result
    }

    /// Closes the session; later calls fail with `.connectionLost`. On queue.
    func finish() {
        if let pointer { PQfinish(pointer) }
        pointer = nil
        prepared = [:]
        invalidated = []
    }

    /// True while the session is open, healthy and usable. On queue.
    var isUsable: Bool {
        guard let pointer, !poisoned else { return false }
        return PQstatus(pointer) == CONNECTION_OK
    }

    /// True when the session is inside a transaction block (or one that failed). On queue.
    var isInTransaction: Bool {
        guard let pointer else { return false }
        return PQtransactionStatus(pointer) != PQTRANS_IDLE
    }

    /// Runs one statement with `$n` binds through the extended protocol (`PQexecParams`),
    /// which also refuses multiple statements in one string. On queue.
    func query(_ sql: String, _ binds: [PostgresValue.Encoded]) -> Result<PostgresRows, PostgresError> {
        guard let pointer else { return .failure(Self.closedError) }
        guard binds.count <= 65_535 else {
            return .failure(PostgresError(kind: .other, message: "too many binds (\(binds.count)); the protocol allows 65535"))
        }
        let types = binds.map { Oid($0.oid) }
        let formats = binds.map { Int32($0.binary ? 1 : 0) }
        let lengths = binds.map { Int32(clamping: $0.bytes?.count ?? 0) }
        // NUL-terminated copies that live until PQexecParams returns; binary values use lengths.
        let buffers: [UnsafeMutablePointer<CChar>?] = binds.map { bind in
            guard let bytes = bind.bytes else { return nil }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: source.count) }
            }
            buffer[bytes.count] = 0
            return buffer
        }
        defer { for buffer in buffers { buffer?.deallocate() } }
        let values = buffers.map { $0.map { UnsafePointer($0) } }
        guard pooling == .session else {
            // The unnamed statement: Parse, Bind, Execute and Sync leave together, so a
            // transaction-mode pooler runs all of them on one server session.
            return consume(PQexecParams(pointer, sql, Int32(binds.count), types, values, lengths, formats, 0), pointer)
        }
        let cacheKey = sql + "\u{1}" + types.map { String($0) }.joined(separator: ",")
        func runPrepared(_ name: String) -> Result<PostgresRows, PostgresError> {
            consume(PQexecPrepared(pointer, name, Int32(binds.count), values, lengths, formats, 0), pointer)
        }
        var name = prepared[cacheKey]
        if name == nil {
            switch prepare(sql, types: types, cacheKey: cacheKey, pointer) {
            case .success(let preparedName): name = preparedName
            // The server refused the statement itself (syntax, unknown table, aborted
            // transaction): that is the caller's error, reported as is.
            case .failure(let error): return .failure(error)
            }
        }
        if let name {
            let outcome = runPrepared(name)
            guard case .failure(let error) = outcome else { return outcome }
            // Both failures below are raised before the statement runs, and inside a
            // transaction they have aborted it, so there they are returned as they are.
            let inTransaction = PQtransactionStatus(pointer) != PQTRANS_IDLE
            switch error.sqlState {
            case "0A000":
                // A table changed under the prepared plan ("cached plan must not change result
                // type"): the statement is useless now. Run this call unprepared; the next one
                // prepares anew, after deallocating the old one (its name is taken).
                prepared[cacheKey] = nil
                invalidated.insert(name)
                if inTransaction { return outcome }
            case "26000":
                // The server session no longer has the statement: DEALLOCATE or DISCARD ALL ran,
                // or a pooler moved this client to another server session. The next call
                // prepares it again; this one runs unnamed, because behind a pooler a statement
                // prepared now may be on another server session by the time it is bound.
                prepared[cacheKey] = nil
                if inTransaction { return outcome }
            default:
                return outcome
            }
        }
        let result = PQexecParams(pointer, sql, Int32(binds.count), types, values, lengths, formats, 0)
        return consume(result, pointer)
    }

    /// Prepares `sql` under its name; `nil` (run unprepared) when the cache is full. On queue.
    ///
    /// The name is derived from the SQL and the parameter types alone, so on any server session
    /// a statement of that name is this statement: a server session shared with other clients
    /// (a pooler's) can hand this client another client's statement of the same text, never a
    /// different one.
    private func prepare(_ sql: String, types: [Oid], cacheKey: String, _ pointer: OpaquePointer) -> Result<String?, PostgresError> {
        guard prepared.count < Self.preparedLimit else { return .success(nil) }
        let name = Self.statementName(cacheKey)
        if invalidated.contains(name) {
            // The old plan of this name fails every call; its name must be free before PREPARE.
            // A session that lost it meanwhile answers 26000, which is as good outside a
            // transaction but would abort one: there the statement runs unnamed until later.
            guard PQtransactionStatus(pointer) == PQTRANS_IDLE else { return .success(nil) }
            _ = consume(PQexec(pointer, "DEALLOCATE \"\(name)\""), pointer)
            invalidated.remove(name)
        }
        switch consume(PQprepare(pointer, name, sql, Int32(types.count), types), pointer) {
        case .success:
            prepared[cacheKey] = name
            return .success(name)
        case .failure(let error) where error.sqlState == "42P05" && PQtransactionStatus(pointer) == PQTRANS_IDLE:
            // Already on this server session under this name, so the same SQL and types:
            // prepared by another client sharing the session through a pooler. Adopted.
            prepared[cacheKey] = name
            return .success(name)
        case .failure(let error):
            return .failure(error)
        }
    }

    /// `payhook_` and the first 40 hex digits (160 bits) of the SHA-256 of the SQL and its
    /// parameter types: 48 characters, inside PostgreSQL's 63-byte identifiers.
    static func statementName(_ cacheKey: String) -> String {
        "payhook_" + String(Hex.encode(Digest.hash(.sha256, Array(cacheKey.utf8))).prefix(40))
    }

    /// Runs SQL through the simple protocol (`PQexec`): several statements, no binds. On queue.
    func execute(_ sql: String) -> Result<PostgresRows, PostgresError> {
        guard let pointer else { return .failure(Self.closedError) }
        return consume(PQexec(pointer, sql), pointer)
    }

    /// Runs `sql`, which must be a `COPY … FROM STDIN`, and streams `data` then `trailer` into
    /// it. Returns the COPY's result (its command tag counts the rows) or its error. On queue.
    func copy(_ sql: String, _ data: [UInt8], trailer: [UInt8]) -> Result<PostgresRows, PostgresError> {
        guard let pointer else { return .failure(Self.closedError) }
        // Refused before it runs: any other statement would execute (and commit) first.
        let statement = sql.drop(while: { $0.isWhitespace })
        guard statement.prefix(4).uppercased() == "COPY", statement.dropFirst(4).first?.isWhitespace == true else {
            return .failure(Self.notCopyFromStdin)
        }
        guard let started = PQexec(pointer, sql) else { return .failure(Libpq.connectionError(pointer)) }
        guard PQresultStatus(started) == PGRES_COPY_IN else {
            // The statement failed, or was not a COPY FROM STDIN: `consume` reports the error,
            // and discards the session if the server started another kind of COPY.
            let outcome = consume(started, pointer)
            guard case .success = outcome else { return outcome }
            return .failure(Self.notCopyFromStdin)
        }
        PQclear(started)
        // In blocking mode each call returns once libpq has buffered or sent the bytes; chunks
        // keep every length inside the Int32 the call takes.
        func send(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let length = min(buffer.count - offset, 1 << 20)
                    let chunk = buffer.baseAddress!.advanced(by: offset).assumingMemoryBound(to: CChar.self)
                    guard PQputCopyData(pointer, chunk, Int32(length)) == 1 else { return false }
                    offset += length
                }
                return true
            }
        }
        guard send(data), send(trailer), PQputCopyEnd(pointer, nil) == 1 else {
            // The session may still be inside the COPY: never hand it out again.
            poisoned = true
            return .failure(Libpq.connectionError(pointer))
        }
        // The COPY's own result, then NULL; anything between is drained so the session is idle.
        var outcome: Result<PostgresRows, PostgresError>?
        while let result = PQgetResult(pointer) {
            let status = PQresultStatus(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                // A second COPY in the same string: libpq would return its result forever rather
                // than NULL. `consume` reports it and marks the session poisoned.
                return consume(result, pointer)
            }
            if outcome == nil { outcome = consume(result, pointer) } else { PQclear(result) }
        }
        return outcome ?? .failure(Libpq.connectionError(pointer))
    }

    /// Notices a server that went away while the session sat idle: reads whatever the socket
    /// has (a FATAL message and EOF after a restart) without blocking. On queue.
    func checkIdleHealth() -> Bool {
        guard let pointer, isUsable else { return false }
        var descriptor = pollfd(fd: PQsocket(pointer), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { return false }
        // A terminated session first delivers its FATAL message (which libpq, idle, treats as a
        // notice) and only the next read sees EOF; so read until the socket is quiet.
        var reads = 0
        while reads < 16, poll(&descriptor, 1, 0) > 0 {
            reads += 1
            if PQconsumeInput(pointer) == 0 { return false }
            // Pool connections do not LISTEN, but a caller may have; drop what arrived.
            while let notify = PQnotifies(pointer) { PQfreemem(notify) }
            if !isUsable { return false }
        }
        return isUsable
    }

    /// Copies everything out of `result`, then clears it.
    private func consume(_ result: OpaquePointer?, _ pointer: OpaquePointer) -> Result<PostgresRows, PostgresError> {
        guard let result else {
            return .failure(Libpq.connectionError(pointer))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return .success(Libpq.rows(from: result))
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            poisoned = true
            return .failure(PostgresError(kind: .other, message: "unexpected COPY (only copy(_:_:) runs one, FROM STDIN); the connection is discarded"))
        default:
            return .failure(Libpq.error(from: result, pointer))
        }
    }

    static let closedError = PostgresError(kind: .connectionLost, message: "connection is closed")
    static let notCopyFromStdin = PostgresError(kind: .other, message: "copy(_:_:) needs a COPY … FROM STDIN statement")
}

/// A `PGconn` that has not found its owner yet; `take()` transfers it.
/// `~Copyable` so the pointer cannot be duplicated on the way to its single owner.
struct OwnedPGconn: ~Copyable {
    private var pointer: OpaquePointer?
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    consuming func take() -> OpaquePointer? {
        let taken = pointer
        pointer = nil
        return taken
    }
    deinit { if let pointer { PQfinish(pointer) } }
}

/// Stateless libpq helpers shared by connections and the listener.
enum Libpq {
    /// Session settings every connection relies on: ISO timestamps in UTC for
    /// `PostgresTimestamp`, hex `bytea` for the `[UInt8]` decoder.
    static let sessionSetup = "SET DateStyle TO 'ISO'; SET TimeZone TO 'UTC'; SET bytea_output TO 'hex'"

    /// Behind a transaction-mode pooler a `SET` lands on whichever server session runs it.
    /// PgBouncer keeps DateStyle and TimeZone (parameters the server reports) per client and
    /// sets them on each server session it hands over; it does not keep `bytea_output`, so
    /// that one is not set and the `[UInt8]` decoder reads both output formats.
    static let pooledSessionSetup = "SET DateStyle TO 'ISO'; SET TimeZone TO 'UTC'"

    static func sessionSetup(for pooling: PostgresPooling) -> String {
        pooling == .session ? sessionSetup : pooledSessionSetup
    }

    /// Connects (blocking) and applies `sessionSetup`.
    ///
    /// The conninfo string (URI or `key=value`) is parsed by libpq and completed with
    /// `PostgresConnectionDefaults` (short connect timeout, TCP keepalives) where it is silent.
    /// `callDeadline` bounds the session setup as it bounds later calls (see
    /// `CallDeadlineWatchdog`); the connection phase itself is bounded by `connect_timeout`.
    static func connect(_ conninfo: String, pooling: PostgresPooling = .session,
                        callDeadline: Duration? = nil) -> Result<OwnedPGconn, PostgresError> {
        let parameters: [(keyword: String, value: String)]
        do {
            parameters = try PostgresConnectionDefaults.resolve(conninfo)
        } catch {
            return .failure(error)
        }
        let cKeywords = parameters.map { strdup($0.keyword) }
        let cValues = parameters.map { strdup($0.value) }
        defer {
            for pointer in cKeywords { free(pointer) }
            for pointer in cValues { free(pointer) }
        }
        let keywordArray = cKeywords.map { $0.map { UnsafePointer($0) } } + [nil]
        let valueArray = cValues.map { $0.map { UnsafePointer($0) } } + [nil]
        guard let raw = PQconnectdbParams(keywordArray, valueArray, 0) else {
            return .failure(PostgresError(kind: .connectionFailed, message: "libpq could not allocate a connection"))
        }
        let connection = OwnedPGconn(raw)
        // libpq prints NOTICE/WARNING (with DETAIL, which can hold row values) to stderr by
        // default; a library must not write there, so they are dropped.
        PQsetNoticeProcessor(raw, { _, _ in }, nil)
        guard PQstatus(raw) == CONNECTION_OK else {
            return .failure(PostgresError(kind: .connectionFailed, message: firstLine(PQerrorMessage(raw))))
        }
        let setup = withDeadline(callDeadline, raw) { PQexec(raw, sessionSetup(for: pooling)) }
        guard !setup.expired, let result = setup.value else {
            if let result = setup.value { PQclear(result) }
            let message = setup.expired ? PostgresError.deadlineExceeded(callDeadline ?? .zero).message : firstLine(PQerrorMessage(raw))
            return .failure(PostgresError(kind: .connectionFailed, message: message))
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            let error = self.error(from: result, raw)
            return .failure(PostgresError(kind: .connectionFailed, sqlState: error.sqlState,
                                          message: "session setup failed: " + error.message))
        }
        return .success(connection)
    }

    /// Runs `work`, a blocking libpq call on `pointer`, under `deadline` (none when `nil`).
    /// `expired` is true when the deadline passed and the socket was shut down: the session is
    /// dead whatever `work` returned.
    static func withDeadline<T>(_ deadline: Duration?, _ pointer: OpaquePointer, _ work: () -> T) -> (value: T, expired: Bool) {
        let socket = PQsocket(pointer)
        guard let deadline, socket >= 0 else { return (work(), false) }
        let ticket = CallDeadlineWatchdog.shared.arm(socket: socket, deadline: deadline)
        let value = work()
        return (value, CallDeadlineWatchdog.shared.disarm(ticket))
    }

    /// The error for a failed command: SQLSTATE, primary message and constraint only.
    static func error(from result: OpaquePointer, _ pointer: OpaquePointer) -> PostgresError {
        let sqlState = field(result, "C")
        let primary = field(result, "M") ?? firstLine(PQresultErrorMessage(result))
        let bad = PQstatus(pointer) != CONNECTION_OK
        return .server(sqlState: sqlState, primaryMessage: primary.isEmpty ? firstLine(PQerrorMessage(pointer)) : primary,
                       constraint: field(result, "n"), connectionBad: bad)
    }

    /// The error when libpq returned no result at all (out of memory or a dead socket).
    static func connectionError(_ pointer: OpaquePointer) -> PostgresError {
        let bad = PQstatus(pointer) != CONNECTION_OK
        return PostgresError(kind: bad ? .connectionLost : .other, message: firstLine(PQerrorMessage(pointer)))
    }

    /// Copies column names, text values and the command tag out of a successful result.
    static func rows(from result: OpaquePointer) -> PostgresRows {
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        var columns = [String]()
        columns.reserveCapacity(columnCount)
        var index = [String: Int]()
        for column in 0..<columnCount {
            let name = PQfname(result, Int32(column)).map { String(cString: $0) } ?? ""
            columns.append(name)
            // The first of duplicate names wins, as in most drivers.
            if index[name] == nil { index[name] = column }
        }
        var rows = [PostgresRow]()
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values = [String?]()
            values.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) != 0 {
                    values.append(nil)
                } else if let value = PQgetvalue(result, Int32(row), Int32(column)) {
                    let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                    let buffer = UnsafeRawBufferPointer(start: value, count: length)
                    values.append(String(decoding: buffer, as: UTF8.self))
                } else {
                    values.append(nil)
                }
            }
            rows.append(PostgresRow(columnIndex: index, values: values))
        }
        let affected = PQcmdTuples(result).map { Int(String(cString: $0)) ?? 0 } ?? 0
        let tag = PQcmdStatus(result).map { String(cString: $0) } ?? ""
        return PostgresRows(columns: columns, rows: rows, affectedRows: affected, commandTag: tag)
    }

    private static func field(_ result: OpaquePointer, _ code: Unicode.Scalar) -> String? {
        guard let value = PQresultErrorField(result, Int32(code.value)) else { return nil }
        return String(cString: value)
    }

    /// libpq messages end in a newline and may continue with more lines; keep the first.
    static func firstLine(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown libpq error" }
        let text = String(cString: message)
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: true).first.map(String.init) ?? ""
        return line.isEmpty ? "unknown libpq error" : line
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
