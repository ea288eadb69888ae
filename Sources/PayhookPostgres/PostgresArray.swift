public import Foundation

/// A one-dimensional array bind in PostgreSQL's binary format, built by appends.
///
/// Why binary: a batch INSERT sends each column as one array (`unnest($1::text[], …)`). In
/// text form (`{"a","b\"c"}`) every element is quoted and escaped here and then tokenized and
/// unescaped by the server's `array_in`; the stored headers JSON, full of quotes, pays both
/// twice. In binary form each element is a length and its bytes: nothing is escaped, and
/// the server reads elements without scanning them (bench/ingest: less CPU per delivery on
/// both sides).
///
/// ```swift
/// var keys = PostgresArray(.text, capacity: rows.count)
/// for row in rows { try keys.append(row.key) }
/// try await pool.query("SELECT … FROM unnest($1::text[]) …", [.array(keys)])
/// ```
public struct PostgresArray: Sendable, Hashable {
    /// The element types this builder can encode.
    public enum Element: Sendable, Hashable {
        /// `text`: UTF-8 bytes as they are.
        case text
        /// `jsonb`: format version 1, then the JSON text (the server validates it).
        case jsonb
        /// `int8`: 8 bytes, big-endian.
        case int8
        /// `int4`: 4 bytes, big-endian.
        case int4
        /// `timestamptz`: microseconds since 2000-01-01 00:00:00 UTC, 8 bytes, big-endian.
        case timestamptz

        /// Element type OID and array type OID, from `pg_type` (stable across versions).
        var oids: (element: UInt32, array: UInt32) {
            switch self {
            case .text: (25, 1009)
            case .jsonb: (3802, 3807)
            case .int8: (20, 1016)
            case .int4: (23, 1007)
            case .timestamptz: (1184, 1185)
            }
        }
    }

    public let element: Element
    /// Elements appended so far.
    public private(set) var count = 0
    /// The wire bytes, header included: dimensions (1), null flag, element OID, length,
    /// lower bound (1), then per element its length (-1 for NULL) and bytes. The null flag and
    /// the length are kept current by every append, so the bind is these bytes as they are.
    private(set) var encoded: [UInt8] = []

    private static let nullFlagOffset = 4
    private static let lengthOffset = 12
    private static let headerSize = 20

    /// - Parameter capacity: expected bytes of element data, to allocate once.
    public init(_ element: Element, capacity: Int = 0) {
        self.element = element
        encoded.reserveCapacity(Self.headerSize + capacity)
        for field in [1, 0, Int32(bitPattern: element.oids.element), 0, 1] as [Int32] {
            PostgresBinaryFormat.appendBigEndian(field, to: &encoded)
        }
    }

    /// Appends a `text` or `jsonb` element; `nil` is SQL NULL.
    /// - Throws: `.other` when the text contains NUL (PostgreSQL text cannot hold it), or when
    ///   the array holds integers.
    public mutating func append(_ text: String?) throws(PostgresError) {
        guard element == .text || element == .jsonb else {
            throw PostgresError(kind: .other, message: "a text element cannot go into an \(element) array")
        }
        guard let text else {
            appendNull()
            return
        }
        guard PostgresBinaryFormat.appendText(text, jsonb: element == .jsonb, to: &encoded) else {
            throw PostgresError(kind: .other, message: "text array element contains a NUL character, which PostgreSQL text cannot store")
        }
        counted()
    }

    /// Appends an `int8` or `int4` element.
    /// - Throws: `.other` when the value does not fit the element type, or the array holds text.
    public mutating func append(_ number: Int64) throws(PostgresError) {
        switch element {
        case .int8:
            PostgresBinaryFormat.appendInt8(number, to: &encoded)
        case .int4:
            guard let narrow = Int32(exactly: number) else {
                throw PostgresError(kind: .other, message: "int4 array element \(number) is out of range")
            }
            PostgresBinaryFormat.appendInt4(narrow, to: &encoded)
        case .text, .jsonb, .timestamptz:
            throw PostgresError(kind: .other, message: "an integer element cannot go into a \(element) array")
        }
        counted()
    }

    /// Appends a `timestamptz` element, rounded to the microsecond as PostgreSQL stores it.
    /// - Throws: `.other` when the array does not hold timestamps or the date is not finite.
    public mutating func append(_ date: Date) throws(PostgresError) {
        guard element == .timestamptz else {
            throw PostgresError(kind: .other, message: "a date cannot go into a \(element) array")
        }
        guard PostgresBinaryFormat.appendTimestamp(date, to: &encoded) else {
            throw PostgresError(kind: .other, message: "timestamptz array element is outside the supported range")
        }
        counted()
    }

    /// Appends SQL NULL.
    public mutating func appendNull() {
        encoded[Self.nullFlagOffset + 3] = 1
        PostgresBinaryFormat.appendNull(to: &encoded)
        counted()
    }

    private mutating func counted() {
        count += 1
        let length = UInt32(clamping: count)
        for index in 0..<4 {
            encoded[Self.lengthOffset + index] = UInt8(truncatingIfNeeded: length >> UInt32(24 - 8 * index))
        }
    }
}
