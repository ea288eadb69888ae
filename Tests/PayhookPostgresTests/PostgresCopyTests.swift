import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

@Suite("Binary COPY rows (no server)")
struct PostgresCopyRowsUnitTests {
    @Test("misuse is refused with a clear error: a value before startRow, one value too many, a short row, NUL in text")
    func refusals() throws {
        var rows = PostgresCopyRows(columns: 2)
        let early = #expect(throws: PostgresError.self) { try rows.appendText("a") }
        #expect(early?.message.contains("before startRow") == true)
        try rows.startRow()
        try rows.appendText("a")
        let short = #expect(throws: PostgresError.self) { try rows.startRow() }
        #expect(short?.message.contains("has 1 of its 2 values") == true)
        try rows.appendBytes([1])
        let extra = #expect(throws: PostgresError.self) { try rows.appendBytes([2]) }
        #expect(extra?.message.contains("already has its 2 values") == true)
        try rows.startRow()
        let nul = #expect(throws: PostgresError.self) { try rows.appendText("a\u{0}b") }
        #expect(nul?.message.contains("NUL") == true)
        #expect(throws: PostgresError.self) { try rows.appendJSONB("\"\u{0}\"") }
        #expect(rows.rowCount == 2)
    }
}

@Suite("Binary COPY against a real server", .timeLimit(.minutes(5)))
struct PostgresCopyTests {
    static let table = """
        CREATE TABLE copied (
            id serial PRIMARY KEY, label text UNIQUE, doc jsonb, at timestamptz, data bytea NOT NULL)
        """
    static let copySQL = "COPY copied (label, doc, at, data) FROM STDIN (FORMAT binary)"

    static func appendRow(_ rows: inout PostgresCopyRows, _ label: String?, _ doc: String, _ at: Date, _ data: [UInt8]) throws {
        try rows.startRow()
        try rows.appendText(label)
        try rows.appendJSONB(doc)
        try rows.appendTimestamp(at)
        try rows.appendBytes(data)
    }

    @Test("text (NULL included), jsonb, timestamptz and bytea values arrive exactly, in row order, and the count comes back")
    func roundTrip() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.execute(Self.table)
            let labels: [String?] = ["plain", "", #"q"b\c"#, "x,y {z}\tNULL\n", nil, "naïve 🧾 e\u{301}", String(repeating: "'\\", count: 5_000)]
            let at = Date(timeIntervalSince1970: 1_796_001_460.123456)
            let blobs: [[UInt8]] = [[], Array(0...255), Array(repeating: 0, count: 70_000), Array("\\.\n".utf8), [255], [0], Array(#"{"a":1}"#.utf8)]
            var rows = PostgresCopyRows(columns: 4)
            for index in labels.indices {
                try Self.appendRow(&rows, labels[index], #"{"n": \#(index), "s": "a\"b"}"#, at.addingTimeInterval(Double(index) * 0.000001), blobs[index])
            }
            #expect(try await connection.copy(Self.copySQL, rows) == labels.count)

            let stored = try await connection.query("""
                SELECT label, doc->>'n' AS n, doc->>'s' AS s, (extract(epoch FROM at) * 1000000)::int8 AS micros, data
                FROM copied ORDER BY id
                """)
            #expect(stored.rows.count == labels.count)
            for (index, row) in stored.enumerated() {
                #expect(try row.decode("label", as: String?.self) == labels[index])
                #expect(try row.decode("n", as: Int.self) == index)
                #expect(try row.decode("s", as: String.self) == #"a"b"#)
                #expect(try row.decode("micros", as: Int64.self) == 1_796_001_460_123_456 + Int64(index))
                #expect(try row.decode("data", as: [UInt8].self) == blobs[index])
            }
            // An empty stream is a valid COPY of nothing.
            #expect(try await connection.copy(Self.copySQL, PostgresCopyRows(columns: 4)) == 0)
        }
    }

    @Test("a refused row stores nothing of its COPY, the error names the constraint, and the session stays usable")
    func refusedCopy() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            try await pool.query(Self.table)
            func backend() async throws -> Int { try await pool.query("SELECT pg_backend_pid() AS pid").rows[0].decode("pid") }
            let session = try await backend()
            let at = Date()
            var first = PostgresCopyRows(columns: 4)
            try Self.appendRow(&first, "a", "{}", at, [1])
            #expect(try await pool.copy(Self.copySQL, first) == 1)

            var clashing = PostgresCopyRows(columns: 4)
            try Self.appendRow(&clashing, "b", "{}", at, [2])
            try Self.appendRow(&clashing, "a", "{}", at, [3])
            let unique = await #expect(throws: PostgresError.self) { try await pool.copy(Self.copySQL, clashing) }
            #expect(unique?.kind == .uniqueViolation)
            #expect(unique?.constraint == "copied_label_key")

            var badJSON = PostgresCopyRows(columns: 4)
            try Self.appendRow(&badJSON, "c", "{not json", at, [4])
            await #expect(throws: PostgresError.self) { try await pool.copy(Self.copySQL, badJSON) }

            // A value in the wrong binary format: eight bytes of text where an int4 belongs.
            var wrongType = PostgresCopyRows(columns: 1)
            try wrongType.startRow()
            try wrongType.appendText("abcdefgh")
            await #expect(throws: PostgresError.self) { try await pool.copy("COPY copied (id) FROM STDIN (FORMAT binary)", wrongType) }

            // A statement that is not COPY FROM STDIN is refused, whatever it is.
            let notCopy = await #expect(throws: PostgresError.self) { try await pool.copy("SELECT 1", first) }
            #expect(notCopy?.message.contains("COPY") == true)

            let labels = try await pool.query("SELECT label FROM copied ORDER BY id").map { try $0.decode("label", as: String.self) }
            #expect(labels == ["a"])
            // The same session served every call: none of the refusals broke it.
            #expect(try await backend() == session)
            await pool.close()
        }
    }

    @Test("a COPY TO STDOUT or two COPYs in one string end in an error, never a hang, and the pool replaces that session")
    func otherCopies() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            try await pool.query(Self.table)
            func backend() async throws -> Int { try await pool.query("SELECT pg_backend_pid() AS pid").rows[0].decode("pid") }
            var rows = PostgresCopyRows(columns: 4)
            try Self.appendRow(&rows, "x", "{}", Date(), [1])
            let first = try await backend()
            await #expect(throws: PostgresError.self) { try await pool.copy("COPY copied (label) TO STDOUT", rows) }
            let second = try await backend()
            #expect(second != first)
            await #expect(throws: PostgresError.self) { try await pool.copy(Self.copySQL + "; " + Self.copySQL, rows) }
            #expect(try await backend() != second)
            await pool.close()
        }
    }

    @Test("inside a transaction the COPY's rows go with the transaction: rolled back, nothing is stored")
    func insideTransaction() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.execute(Self.table)
            var rows = PostgresCopyRows(columns: 4)
            try Self.appendRow(&rows, "t", "[]", Date(), [9])
            struct Abandon: Error {}
            await #expect(throws: Abandon.self) {
                try await connection.transaction { connection in
                    #expect(try await connection.copy(Self.copySQL, rows) == 1)
                    throw Abandon()
                }
            }
            let count = try await connection.query("SELECT count(*) AS n FROM copied")
            #expect(try count.rows.first?.decode("n", as: Int.self) == 0)
            #expect(!connection.isBroken)
        }
    }
}
