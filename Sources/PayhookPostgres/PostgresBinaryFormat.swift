import Foundation

/// PostgreSQL's binary send formats for the values payhook writes in bulk, shared by array
/// binds (`PostgresArray`) and binary COPY (`PostgresCopyRows`). In both, a value is its length
/// (4 bytes, big-endian; -1 for NULL) followed by its bytes; only the framing around differs.
enum PostgresBinaryFormat {
    /// Appends `text` as a `text` value, or as a `jsonb` one (format version 1, then the JSON
    /// text, which the server validates). Returns false, appending nothing, when the text holds
    /// NUL, which PostgreSQL text cannot store.
    static func appendText(_ text: String, jsonb: Bool, to buffer: inout [UInt8]) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            // memchr: vectorized, where a byte loop cost about 1 ns a byte (headers JSON and
            // dedup keys: hundreds of bytes per stored row).
            if let base = utf8.baseAddress, memchr(base, 0, utf8.count) != nil { return false }
            appendLength(utf8.count + (jsonb ? 1 : 0), to: &buffer)
            if jsonb { buffer.append(1) }
            buffer.append(contentsOf: utf8)
            return true
        }
    }

    /// Appends a `bytea` value: the bytes as they are.
    static func appendBytes(_ bytes: [UInt8], to buffer: inout [UInt8]) {
        appendLength(bytes.count, to: &buffer)
        buffer.append(contentsOf: bytes)
    }

    /// Appends an `int8` value.
    static func appendInt8(_ number: Int64, to buffer: inout [UInt8]) {
        appendLength(8, to: &buffer)
        appendBigEndian(number, to: &buffer)
    }

    /// Appends an `int4` value.
    static func appendInt4(_ number: Int32, to buffer: inout [UInt8]) {
        appendLength(4, to: &buffer)
        appendBigEndian(number, to: &buffer)
    }

    /// Appends a `timestamptz` value: microseconds since 2000-01-01 00:00:00 UTC, rounded as
    /// PostgreSQL stores it. Returns false, appending nothing, when the date is not finite or
    /// beyond 64-bit microseconds (the server enforces its own, narrower range).
    static func appendTimestamp(_ date: Date, to buffer: inout [UInt8]) -> Bool {
        // Rounded in Unix microseconds first, exactly as the `.timestamptz` text bind does
        // (`PostgresTimestamp.format`), then shifted by an integer: subtracting the epoch in
        // floating point would round about one date in sixteen to the neighbouring microsecond.
        let unixMicros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard let exact = Int64(exactly: unixMicros), exact > Int64.min + postgresEpochMicros else { return false }
        appendLength(8, to: &buffer)
        appendBigEndian(exact - postgresEpochMicros, to: &buffer)
        return true
    }

    /// Appends SQL NULL.
    static func appendNull(to buffer: inout [UInt8]) {
        appendLength(-1, to: &buffer)
    }

    /// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 00:00:00 UTC).
    private static let postgresEpochMicros: Int64 = 946_684_800_000_000

    static func appendLength(_ length: Int, to buffer: inout [UInt8]) {
        appendBigEndian(UInt32(bitPattern: Int32(clamping: length)), to: &buffer)
    }

    /// Appends `value`'s bytes, most significant first. One copy of the whole integer: a
    /// byte-by-byte append checked capacity and uniqueness per byte, which showed in the
    /// ingest profile (four lengths and more per stored row).
    static func appendBigEndian<Value: FixedWidthInteger>(_ value: Value, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
    }
}
