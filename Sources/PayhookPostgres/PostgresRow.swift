public import Foundation

/// One result row, with values copied out of libpq in text format.
///
/// Rows are plain values: they outlive the connection and may cross tasks.
public struct PostgresRow: Sendable {
    /// Column name to position, shared by every row of one result.
    let columnIndex: [String: Int]
    /// Text-format values; nil is SQL NULL.
    let values: [String?]

    /// Decodes the named column.
    ///
    /// `Optional<T>` decodes NULL to nil; a non-optional type throws on NULL, so a schema that
    /// unexpectedly allows NULL is reported instead of producing a default.
    /// - Throws: `.decoding` naming the column when it is missing, NULL for a non-optional
    ///   type, or not parseable as `T`. The value itself is never included.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let index = columnIndex[column] else {
            throw PostgresError(kind: .decoding, message: "no column named \"\(column)\" in the result")
        }
        do {
            return try T.decode(postgresText: values[index])
        } catch {
            throw PostgresError(kind: .decoding, message: "column \"\(column)\": \(error.reason)")
        }
    }

    /// True when the column is SQL NULL or absent from the result.
    public func isNull(_ column: String) -> Bool {
        guard let index = columnIndex[column] else { return true }
        return values[index] == nil
    }
}

/// The outcome of one statement: its rows (if any) and how many rows it affected.
public struct PostgresRows: Sendable, Sequence {
    /// Column names in result order.
    public let columns: [String]
    /// Every row, already copied out of libpq.
    public let rows: [PostgresRow]
    /// Rows inserted/updated/deleted/selected, as reported by the command tag (`PQcmdTuples`);
    /// 0 for commands that report none.
    public let affectedRows: Int
    /// The command tag, e.g. `INSERT 0 1` or `ROLLBACK`; used to spot a COMMIT that rolled back.
    let commandTag: String

    /// Iterates over `rows`.
    public func makeIterator() -> IndexingIterator<[PostgresRow]> { rows.makeIterator() }
}

/// Why a text value could not be decoded; wrapped with the column name by `PostgresRow`.
public struct PostgresDecodingFailure: Error, Sendable {
    /// A short reason that never includes the value itself.
    public let reason: String
    /// Creates a failure with a reason that must not contain the value.
    public init(_ reason: String) { self.reason = reason }
}

/// A Swift type that can be read from a text-format PostgreSQL value.
///
/// Conforming types: `String` (also `jsonb`, `uuid`, `numeric` as text), `Int`, `Int64`,
/// `Int32`, `Bool`, `Double`, `[UInt8]` (`bytea`), `Date` (`timestamptz`, with microseconds) and
/// `Optional` of any of them.
public protocol PostgresDecodable: Sendable {
    /// Decodes a text-format value; `text` is nil for SQL NULL.
    /// - Throws: a failure whose reason does not contain the value.
    static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Self
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    /// NULL decodes to nil; anything else decodes as `Wrapped`.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Wrapped? {
        guard let text else { return nil }
        return try Wrapped.decode(postgresText: text)
    }
}

extension PostgresDecodingFailure {
    static func null(_ type: Any.Type) -> PostgresDecodingFailure {
        PostgresDecodingFailure("is NULL but \(type) is not optional (decode as \(type)? instead)")
    }
}

extension String: PostgresDecodable {
    /// The text as sent by the server.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> String {
        guard let text else { throw .null(String.self) }
        return text
    }
}

/// The integer decoders' one rule: NULL is refused, and decimal text that does not fit the type
/// throws rather than truncating.
private func decodeInteger<Integer: FixedWidthInteger>(_ text: String?) throws(PostgresDecodingFailure) -> Integer {
    guard let text else { throw .null(Integer.self) }
    guard let value = Integer(text) else { throw PostgresDecodingFailure("is not an integer that fits \(Integer.self)") }
    return value
}

extension Int64: PostgresDecodable {
    /// Parses int2/int4/int8 text.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Int64 {
        try decodeInteger(text)
    }
}

extension Int: PostgresDecodable {
    /// Parses int2/int4/int8 text.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Int {
        try decodeInteger(text)
    }
}

extension Int32: PostgresDecodable {
    /// Parses int2/int4 text; an int8 beyond Int32's range throws rather than truncating.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Int32 {
        try decodeInteger(text)
    }
}

extension Bool: PostgresDecodable {
    /// Parses `t` / `f`.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Bool {
        switch text {
        case "t": return true
        case "f": return false
        case nil: throw .null(Bool.self)
        default: throw PostgresDecodingFailure("is not a bool (t/f)")
        }
    }
}

extension Double: PostgresDecodable {
    /// Parses float4/float8/numeric text, including `NaN`, `Infinity`, `-Infinity`.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Double {
        guard let text else { throw .null(Double.self) }
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            guard let value = Double(text) else { throw PostgresDecodingFailure("is not a floating-point number") }
            return value
        }
    }
}

extension Array: PostgresDecodable where Element == UInt8 {
    /// Parses `bytea` in hex output format (`\x0a1b…`), which a connection of its own selects,
    /// or in escape format (`ab\000\\`), which a server session shared through a
    /// transaction-mode pooler may have been left in by another client. Escape output writes a
    /// backslash as `\\`, so it never starts with `\x`.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> [UInt8] {
        guard let text else { throw .null([UInt8].self) }
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") else {
            return try decodeEscapeFormat(utf8)
        }
        guard utf8.count % 2 == 0 else { throw PostgresDecodingFailure("is not bytea in hex format") }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = hexValue(utf8[index]), let low = hexValue(utf8[index + 1]) else {
                throw PostgresDecodingFailure("is not bytea in hex format")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// `bytea_output = escape`: printable ASCII as itself, `\\` for a backslash, `\ooo`
    /// (three octal digits) for every other byte.
    private static func decodeEscapeFormat(_ utf8: [UInt8]) throws(PostgresDecodingFailure) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            guard byte == UInt8(ascii: "\\") else {
                bytes.append(byte)
                index += 1
                continue
            }
            if index + 1 < utf8.count, utf8[index + 1] == UInt8(ascii: "\\") {
                bytes.append(byte)
                index += 2
                continue
            }
            guard index + 3 < utf8.count else { throw PostgresDecodingFailure("is not bytea in hex or escape format") }
            var value = 0
            for digit in utf8[(index + 1)...(index + 3)] {
                guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "7") else {
                    throw PostgresDecodingFailure("is not bytea in hex or escape format")
                }
                value = value * 8 + Int(digit - UInt8(ascii: "0"))
            }
            guard value <= 255 else { throw PostgresDecodingFailure("is not bytea in hex or escape format") }
            bytes.append(UInt8(value))
            index += 4
        }
        return bytes
    }
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

extension Date: PostgresDecodable {
    /// Parses `timestamptz` ISO output (`2024-02-29 12:34:56.789012+00`), keeping microseconds.
    /// `infinity`, `-infinity` and BC dates throw.
    public static func decode(postgresText text: String?) throws(PostgresDecodingFailure) -> Date {
        guard let text else { throw .null(Date.self) }
        guard let date = PostgresTimestamp.parse(text) else {
            throw PostgresDecodingFailure("is not a timestamptz in ISO format")
        }
        return date
    }
}
