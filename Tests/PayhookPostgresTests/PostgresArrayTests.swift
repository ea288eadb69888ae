import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

@Suite("Binary array binds (no server)")
struct PostgresArrayUnitTests {
    @Test("misuse is refused with a clear error: NUL in text, a number in a text array, text in a number array, int4 overflow")
    func refusals() {
        var texts = PostgresArray(.text)
        let nul = #expect(throws: PostgresError.self) { try texts.append("a\u{0}b") }
        #expect(nul?.kind == .other)
        #expect(nul?.message.contains("NUL") == true)
        #expect(texts.count == 0)
        #expect(throws: PostgresError.self) { try texts.append(Int64(1)) }
        var numbers = PostgresArray(.int4)
        #expect(throws: PostgresError.self) { try numbers.append("1") }
        let overflow = #expect(throws: PostgresError.self) { try numbers.append(Int64(Int32.max) + 1) }
        #expect(overflow?.message.contains("out of range") == true)
        #expect(numbers.count == 0)
    }

    @Test("equal appends give equal binds; a NULL makes a different one")
    func equality() throws {
        var first = PostgresArray(.text)
        var second = PostgresArray(.text, capacity: 64)
        for text in ["a", "b"] {
            try first.append(text)
            try second.append(text)
        }
        #expect(PostgresValue.array(first) == .array(second))
        second.appendNull()
        #expect(PostgresValue.array(first) != .array(second))
        #expect(second.count == 3)
    }
}

@Suite("Binary array binds against a real server", .timeLimit(.minutes(5)))
struct PostgresArrayTests {
    @Test("text, jsonb, int8 and int4 arrays arrive element for element, NULLs, escapes and empty arrays included")
    func roundTrip() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let texts: [String?] = ["plain", "", #"q"b\c"#, "x,y {z} NULL", "naïve 🧾 e\u{301}", nil, "NULL", String(repeating: "'\\", count: 5_000)]
            var textArray = PostgresArray(.text)
            for text in texts { try textArray.append(text) }
            let rows = try await connection.query(
                "SELECT n, t FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n", [.array(textArray)])
            #expect(rows.rows.count == texts.count)
            for row in rows {
                let index = try row.decode("n", as: Int.self) - 1
                #expect(try row.decode("t", as: String?.self) == texts[index])
            }

            let numbers: [Int64] = [0, -1, 7, .max, .min, 1_796_001_460_123_456]
            var int8s = PostgresArray(.int8)
            var int4s = PostgresArray(.int4)
            for number in numbers { try int8s.append(number) }
            for number in [0, -1, Int64(Int32.max), Int64(Int32.min)] { try int4s.append(number) }
            var json = PostgresArray(.jsonb)
            try json.append(#"{"b": "x\"y", "a": [1, 2]}"#)
            json.appendNull()
            let empty = PostgresArray(.int8)
            let summary = try await connection.query("""
                SELECT array_to_string($1::int8[], ',') AS int8s, array_to_string($2::int4[], ',') AS int4s,
                       ($3::jsonb[])[1]::text AS first_json, ($3::jsonb[])[2] IS NULL AS second_null,
                       cardinality($4::int8[]) AS empty_count
                """, [.array(int8s), .array(int4s), .array(json), .array(empty)])
            let row = try #require(summary.rows.first)
            #expect(try row.decode("int8s", as: String.self) == numbers.map(String.init).joined(separator: ","))
            #expect(try row.decode("int4s", as: String.self) == "0,-1,2147483647,-2147483648")
            #expect(try row.decode("first_json", as: String.self) == #"{"a": [1, 2], "b": "x\"y"}"#)
            #expect(try row.decode("second_null", as: Bool.self))
            #expect(try row.decode("empty_count", as: Int.self) == 0)
        }
    }

    @Test("invalid JSON in a jsonb array is the server's error, and the connection stays usable")
    func invalidJSON() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            var json = PostgresArray(.jsonb)
            try json.append("{not json")
            await #expect(throws: PostgresError.self) {
                try await connection.query("SELECT cardinality($1::jsonb[]) AS n", [.array(json)])
            }
            let after = try await connection.query("SELECT 1 AS one")
            #expect(try after.rows.first?.decode("one", as: Int.self) == 1)
        }
    }
}

@Suite("Binary timestamptz array binds", .timeLimit(.minutes(5)))
struct PostgresTimestampArrayTests {
    /// `count` dates within one day, with arbitrary sub-microsecond parts, from a fixed seed.
    static func clockLikeDates(_ count: Int, seed: UInt64) -> [Date] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Date(timeIntervalSince1970: 1_764_480_000 + Double(state >> 24) / Double(1 << 40) * 86_400)
        }
    }

    @Test("dates arrive as the same microsecond as the text bind gives, before and after PostgreSQL's 2000 epoch")
    func timestamps() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            // Fixed edge dates, then clock-like ones with arbitrary sub-microsecond parts: each
            // must land on the microsecond the text bind (`PostgresTimestamp.format`) would give.
            var dates = [
                Date(timeIntervalSince1970: 1_796_001_460.123456), Date(timeIntervalSince1970: 946_684_800),
                Date(timeIntervalSince1970: 0.000001), Date(timeIntervalSince1970: -86_400.5),
            ]
            dates += Self.clockLikeDates(2_000, seed: 0x9E37_79B9_7F4A_7C15)
            var array = PostgresArray(.timestamptz)
            for date in dates { try array.append(date) }
            #expect(throws: PostgresError.self) { try array.append(Int64(1)) }
            let rows = try await connection.query("""
                SELECT n, (extract(epoch FROM t) * 1000000)::int8 AS micros
                FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, n) ORDER BY n
                """, [.array(array)])
            #expect(rows.rows.count == dates.count)
            for row in rows {
                let date = dates[try row.decode("n", as: Int.self) - 1]
                #expect(try row.decode("micros", as: Int64.self) == Int64((date.timeIntervalSince1970 * 1_000_000).rounded()))
            }
        }
    }

    @Test("storedTimestamp is the date a read of the stored value returns, sub-microsecond parts and all")
    func storedTimestamp() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            // Provider timestamps (whole seconds, milliseconds) and clock-like ones.
            var dates = [Date(timeIntervalSince1970: 1_740_406_856), Date(timeIntervalSince1970: 1_740_406_856.123),
                         Date(timeIntervalSince1970: 1_742_900_210.5), Date(timeIntervalSince1970: 1_796_001_460.1234567)]
            dates += Self.clockLikeDates(2_000, seed: 0x2545_F491_4F6C_DD1D)
            var array = PostgresArray(.timestamptz)
            for date in dates { try array.append(date) }
            let rows = try await connection.query("""
                SELECT n, t FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, n) ORDER BY n
                """, [.array(array)])
            #expect(rows.rows.count == dates.count)
            var mismatches = 0
            for row in rows {
                let date = dates[try row.decode("n", as: Int.self) - 1]
                if try row.decode("t", as: Date.self) != PostgresValue.storedTimestamp(date) { mismatches += 1 }
            }
            #expect(mismatches == 0)
            // And the same through the text bind a single-row write uses.
            let single = try await connection.query("SELECT $1::timestamptz AS t", [.timestamptz(dates[1])])
            #expect(try single.rows.first?.decode("t", as: Date.self) == PostgresValue.storedTimestamp(dates[1]))
        }
    }
}
