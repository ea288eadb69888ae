public import Foundation

/// A value bound to a `$n` parameter of a query.
///
/// Values always travel separately from the SQL text (`PQexecParams`), so no value is ever
/// spliced into a statement. `.text` is sent with type OID 0 so the server infers the type from
/// context (`WHERE id = $1` works for a `uuid` or `text` column alike); every other case carries
/// an explicit type OID so the server never has to guess.
///
/// ```swift
/// // Wrong: the value becomes SQL.
/// try await pool.query("SELECT * FROM orders WHERE ref = '\(ref)'")
/// // Right: the value is a bind.
/// try await pool.query("SELECT * FROM orders WHERE ref = $1", [.text(ref)])
/// ```
public enum PostgresValue: Sendable, Hashable {
    /// SQL NULL (sent with OID 0, so it fits any parameter type).
    case null
    /// Text; the server infers the parameter type. Must not contain NUL characters.
    case text(String)
    /// `int8`.
    case int(Int64)
    /// `bool`.
    case bool(Bool)
    /// `float8`, including `NaN` and the infinities.
    case double(Double)
    /// `bytea`, sent in binary format so every byte value survives.
    case bytea([UInt8])
    /// `jsonb`, given as JSON text; the server validates it.
    case jsonb(String)
    /// `timestamptz`, sent with microsecond precision in UTC.
    case timestamptz(Date)
    /// A one-dimensional array (`text[]`, `jsonb[]`, `int8[]`, `int4[]`, `timestamptz[]`), sent in
    /// binary format; see `PostgresArray`.
    case array(PostgresArray)
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    /// A `.text` literal.
    public init(stringLiteral value: String) { self = .text(value) }
    /// An `.int` (int8) literal.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A `.bool` literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// SQL NULL.
    public init(nilLiteral: ()) { self = .null }
}

extension PostgresValue {
    /// Integers as the text of a PostgreSQL array (`{1,2,3}`), for a bind the statement casts
    /// (`= ANY($1::bigint[])`, `unnest($1::int[])`): one bind for a whole batch of ids.
    public static func integerArray(_ values: some Sequence<some BinaryInteger>) -> PostgresValue {
        .text("{" + values.map { String($0) }.joined(separator: ",") + "}")
    }
}

/// Wire encoding of bind values: text format for everything except `bytea` and arrays.
extension PostgresValue {
    /// Type OIDs from `pg_type`; stable across PostgreSQL versions.
    enum OID {
        static let unspecified: UInt32 = 0
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let float8: UInt32 = 701
        static let timestamptz: UInt32 = 1184
        static let jsonb: UInt32 = 3802
    }

    /// One encoded parameter: `bytes == nil` is NULL; `binary` selects format code 1.
    struct Encoded {
        var oid: UInt32
        var bytes: [UInt8]?
        var binary: Bool
    }

    /// Encodes the value for `PQexecParams`.
    /// - Throws: `.other` when a text value contains NUL (PostgreSQL text cannot hold it, and a
    ///   C string would silently truncate it) or a date is outside PostgreSQL's range.
    func encoded() throws(PostgresError) -> Encoded {
        switch self {
        case .null:
            return Encoded(oid: OID.unspecified, bytes: nil, binary: false)
        case .text(let string):
            return Encoded(oid: OID.unspecified, bytes: try Self.textBytes(string), binary: false)
        case .int(let value):
            return Encoded(oid: OID.int8, bytes: Array(String(value).utf8), binary: false)
        case .bool(let value):
            return Encoded(oid: OID.bool, bytes: Array((value ? "t" : "f").utf8), binary: false)
        case .double(let value):
            let text: String
            if value.isNaN {
                text = "NaN"
            } else if value.isInfinite {
                text = value < 0 ? "-Infinity" : "Infinity"
            } else {
                // Swift prints the shortest text that round-trips, which float8in parses exactly.
                text = "\(value)"
            }
            return Encoded(oid: OID.float8, bytes: Array(text.utf8), binary: false)
        case .bytea(let bytes):
            return Encoded(oid: OID.bytea, bytes: bytes, binary: true)
        case .array(let array):
            return Encoded(oid: array.element.oids.array, bytes: array.encoded, binary: true)
        case .jsonb(let json):
            return Encoded(oid: OID.jsonb, bytes: try Self.textBytes(json), binary: false)
        case .timestamptz(let date):
            guard let text = PostgresTimestamp.format(date) else {
                throw PostgresError(kind: .other, message: "timestamptz bind is outside the supported range")
            }
            return Encoded(oid: OID.timestamptz, bytes: Array(text.utf8), binary: false)
        }
    }

    private static func textBytes(_ string: String) throws(PostgresError) -> [UInt8] {
        let bytes = Array(string.utf8)
        if bytes.contains(0) {
            throw PostgresError(kind: .other, message: "text bind contains a NUL character, which PostgreSQL text cannot store")
        }
        return bytes
    }
}
