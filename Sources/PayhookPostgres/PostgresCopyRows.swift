public import Foundation

/// Rows for `COPY table (columns) FROM STDIN (FORMAT binary)`, built by appends, sent with
/// `PostgresConnection.copy(_:_:)`.
///
/// Why COPY: for a batch of rows the server parses no statement, decodes no array binds and
/// projects no `unnest`; each row is read straight into the table. `bench/copy-vs-insert` on
/// `inbound_events` rows found less server CPU per row than `INSERT … SELECT FROM unnest(…)` of
/// the same rows in every round (bench/README.md, "bench/copy-vs-insert", has the figures).
///
/// Binary COPY carries no type information: each value must be appended in the binary format
/// of its column's type (`appendText` for `text`, `appendJSONB` for `jsonb`, and so on). A
/// mismatch is refused only where the server can tell ("incorrect binary data format" for a
/// wrong length); text bytes into a `bytea` column, for one, are stored as they are.
///
/// ```swift
/// var rows = PostgresCopyRows(columns: 2)
/// for event in events {
///     try rows.startRow()
///     try rows.appendText(event.key)      // key text
///     try rows.appendBytes(event.body)    // body bytea
/// }
/// let stored = try await pool.copy("COPY events (key, body) FROM STDIN (FORMAT binary)", rows)
/// ```
public struct PostgresCopyRows: Sendable {
    /// Values in every row: the COPY statement's column count.
    public let columnCount: Int
    /// Rows started so far.
    public private(set) var rowCount = 0
    private var valuesInRow = 0
    private var encoded: [UInt8] = []

    /// The fixed start of a binary COPY stream: signature, flags, header extension length.
    private static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]

    /// - Parameters:
    ///   - columns: values per row, 1 ... 1600 (PostgreSQL's column limit).
    ///   - capacity: expected bytes of row data, to allocate once.
    public init(columns: Int, capacity: Int = 0) {
        precondition((1...1600).contains(columns), "a COPY row has 1 to 1600 columns, not \(columns)")
        columnCount = columns
        encoded.reserveCapacity(Self.header.count + capacity + 2)
        encoded.append(contentsOf: Self.header)
    }

    /// Starts the next row.
    /// - Throws: `.other` if the previous row has fewer values than `columnCount`.
    public mutating func startRow() throws(PostgresError) {
        try requireCompleteRow()
        PostgresBinaryFormat.appendBigEndian(Int16(columnCount), to: &encoded)
        rowCount += 1
        valuesInRow = 0
    }

    /// Appends a `text` value; `nil` is SQL NULL.
    /// - Throws: `.other` when the text contains NUL, or the row is already full.
    public mutating func appendText(_ text: String?) throws(PostgresError) {
        try requireRoom()
        if let text {
            guard PostgresBinaryFormat.appendText(text, jsonb: false, to: &encoded) else { throw Self.nulError }
        } else {
            PostgresBinaryFormat.appendNull(to: &encoded)
        }
        valuesInRow += 1
    }

    /// Appends a `jsonb` value; the server validates the JSON text.
    /// - Throws: `.other` when the text contains NUL, or the row is already full.
    public mutating func appendJSONB(_ json: String) throws(PostgresError) {
        try requireRoom()
        guard PostgresBinaryFormat.appendText(json, jsonb: true, to: &encoded) else { throw Self.nulError }
        valuesInRow += 1
    }

    /// Appends a `timestamptz` value, rounded to the microsecond as PostgreSQL stores it.
    /// - Throws: `.other` when the date is not finite or beyond 64-bit microseconds, or the row is
    ///   already full (PostgreSQL's narrower timestamp range is the server's to enforce).
    public mutating func appendTimestamp(_ date: Date) throws(PostgresError) {
        try requireRoom()
        guard PostgresBinaryFormat.appendTimestamp(date, to: &encoded) else {
            throw PostgresError(kind: .other, message: "timestamptz COPY value is outside the supported range")
        }
        valuesInRow += 1
    }

    /// Appends a `smallint` value.
    /// - Throws: `.other` when the row is already full.
    public mutating func appendSmallInt(_ number: Int16) throws(PostgresError) {
        try requireRoom()
        PostgresBinaryFormat.appendLength(2, to: &encoded)
        PostgresBinaryFormat.appendBigEndian(number, to: &encoded)
        valuesInRow += 1
    }

    /// Appends a `bytea` value.
    /// - Throws: `.other` when the row is already full.
    public mutating func appendBytes(_ bytes: [UInt8]) throws(PostgresError) {
        try requireRoom()
        PostgresBinaryFormat.appendBytes(bytes, to: &encoded)
        valuesInRow += 1
    }

    /// The stream so far, without its trailer (see `trailer`); shares this value's storage.
    /// - Throws: `.other` if the last row is incomplete.
    func streamWithoutTrailer() throws(PostgresError) -> [UInt8] {
        try requireCompleteRow()
        return encoded
    }

    /// What ends every stream: a field count of -1, that is, no more rows.
    static let trailer: [UInt8] = [0xFF, 0xFF]

    private func requireRoom() throws(PostgresError) {
        guard rowCount > 0, valuesInRow < columnCount else {
            throw PostgresError(kind: .other, message: rowCount == 0
                ? "a COPY value was appended before startRow()"
                : "COPY row \(rowCount) already has its \(columnCount) values")
        }
    }

    private func requireCompleteRow() throws(PostgresError) {
        guard rowCount == 0 || valuesInRow == columnCount else {
            throw PostgresError(kind: .other, message: "COPY row \(rowCount) has \(valuesInRow) of its \(columnCount) values")
        }
    }

    private static let nulError = PostgresError(kind: .other, message: "COPY text value contains a NUL character, which PostgreSQL text cannot store")
}
