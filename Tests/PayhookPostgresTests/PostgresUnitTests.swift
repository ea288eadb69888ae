import Foundation
@testable import PayhookPostgres
import Testing

@Suite("SQLSTATE classification and redaction (no server)")
struct PostgresErrorUnitTests {
    @Test("SQLSTATE codes map to error kinds", arguments: [
        ("23505", PostgresError.Kind.uniqueViolation), ("23503", .foreignKeyViolation), ("23514", .checkViolation),
        ("23502", .notNullViolation), ("40001", .serializationFailure), ("40P01", .deadlockDetected),
        ("57014", .queryCanceled), ("55P03", .lockNotAvailable), ("42P01", .undefinedTable), ("42601", .syntaxError),
        ("57P01", .connectionLost), ("08006", .connectionLost), ("08P01", .other), ("22P02", .other), ("XX000", .other),
    ])
    func kinds(sqlState: String, kind: PostgresError.Kind) {
        #expect(PostgresError.kind(forSQLState: sqlState) == kind)
    }

    @Test("only serialization failures, deadlocks and connection problems are retryable")
    func retryable() {
        let retryable: [PostgresError.Kind] = [.serializationFailure, .deadlockDetected, .connectionLost, .connectionFailed]
        let others: [PostgresError.Kind] = [.uniqueViolation, .syntaxError, .poolTimeout, .poolClosed, .decoding, .migration, .other]
        for kind in retryable { #expect(PostgresError(kind: kind, message: "m").isRetryable) }
        for kind in others { #expect(!PostgresError(kind: kind, message: "m").isRetryable) }
    }

    @Test("class 22 messages lose everything between the first and last quote")
    func redaction() {
        #expect(PostgresError.redacted(#"invalid input syntax for type integer: "a"b""#, sqlState: "22P02")
            == #"invalid input syntax for type integer: "<redacted>""#)
        #expect(PostgresError.redacted(#"value "41111" is out of range for type integer"#, sqlState: "22003")
            == #"value "<redacted>" is out of range for type integer"#)
        #expect(PostgresError.redacted(#"relation "jobs" does not exist"#, sqlState: "42P01") == #"relation "jobs" does not exist"#)
    }
}

@Suite("Timestamp text (no server)")
struct PostgresTimestampUnitTests {
    @Test("ISO output with any offset parses to the exact instant", arguments: [
        ("1970-01-01 00:00:00+00", 0.0),
        ("2024-02-29 12:34:56.789012+00", 1_709_210_096.789_012),
        ("2024-02-29 12:34:56.5-03", 1_709_220_896.5),
        ("2024-02-29 18:04:56.789012+05:30", 1_709_210_096.789_012),
        ("1969-12-31 23:59:59.999999+00", -0.000_001),
        ("0001-01-01 00:00:00+00", -62_135_596_800.0),
    ])
    func parses(text: String, seconds: Double) throws {
        let date = try #require(PostgresTimestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001)
    }

    @Test("non-ISO or unrepresentable text is refused", arguments: ["infinity", "-infinity", "2024-02-29", "2024-13-01 00:00:00+00", "2024-02-29 12:34:56+00 BC", "2024-02-29 12:34:56."])
    func refuses(text: String) {
        #expect(PostgresTimestamp.parse(text) == nil)
    }

    @Test("dates format in UTC with microseconds and parse back")
    func formats() throws {
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1_709_210_096.789_012)) == "2024-02-29 12:34:56.789012+00")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31 23:59:59.500000+00")
        #expect(PostgresTimestamp.format(.distantFuture) == "4001-01-01 00:00:00.000000+00")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1e12)) == nil)
        let now = Date()
        let text = try #require(PostgresTimestamp.format(now))
        let back = try #require(PostgresTimestamp.parse(text))
        #expect(abs(back.timeIntervalSince1970 - now.timeIntervalSince1970) <= 0.000_001)
    }

    @Test("bytea hex and escape text decode, and malformed text is a decoding failure")
    func byteaText() throws {
        #expect(try [UInt8].decode(postgresText: "\\x00ff7F") == [0, 255, 127])
        #expect(throws: PostgresDecodingFailure.self) { try [UInt8].decode(postgresText: "\\x0") }
        #expect(throws: PostgresDecodingFailure.self) { try [UInt8].decode(postgresText: "\\xzz") }
        // Escape format (bytea_output = escape), which a pooler's shared server session may be in.
        #expect(try [UInt8].decode(postgresText: "abc") == [97, 98, 99])
        #expect(try [UInt8].decode(postgresText: "a\\000\\\\\\377") == [97, 0, 92, 255])
        #expect(try [UInt8].decode(postgresText: "") == [])
        #expect(throws: PostgresDecodingFailure.self) { try [UInt8].decode(postgresText: "a\\0") }
        #expect(throws: PostgresDecodingFailure.self) { try [UInt8].decode(postgresText: "\\400") }
        #expect(throws: PostgresDecodingFailure.self) { try [UInt8].decode(postgresText: "\\08a") }
    }
}

@Suite("Array binds (no server)")
struct ArrayBindTests {
    @Test("integers become one array literal bind, signs kept, empty as {}")
    func integerArray() {
        #expect(PostgresValue.integerArray([Int64(7), -2, 9_223_372_036_854_775_807]) == .text("{7,-2,9223372036854775807}"))
        #expect(PostgresValue.integerArray([Int32]()) == .text("{}"))
    }
}
