import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

@Suite("PostgresConnection against a real server", .timeLimit(.minutes(5)))
struct PostgresConnectionTests {
    @Test("hostile strings travel as binds and come back unchanged, and the SQL around them is untouched")
    func hostileStringsRoundTrip() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.execute("CREATE TABLE notes (id int8 PRIMARY KEY, body text NOT NULL)")
            let hostile = [
                "it's", "\"double\"", "'; DROP TABLE notes; --", "\\", "\\x00\\'", "$1", "line\nbreak\ttab",
                "naïve café 🧾 日本語 עברית e\u{301}", "", String(repeating: "'\\", count: 10_000),
            ]
            for (index, text) in hostile.enumerated() {
                try await connection.query("INSERT INTO notes (id, body) VALUES ($1, $2)", [.int(Int64(index)), .text(text)])
            }
            let rows = try await connection.query("SELECT id, body FROM notes ORDER BY id")
            #expect(rows.rows.count == hostile.count)
            for row in rows {
                let id = try row.decode("id", as: Int.self)
                #expect(try row.decode("body", as: String.self) == hostile[id])
            }
            let matched = try await connection.query("SELECT count(*) AS n FROM notes WHERE body = $1", [.text("'; DROP TABLE notes; --")])
            #expect(try matched.rows.first?.decode("n", as: Int.self) == 1)
        }
    }

    @Test("a text bind containing NUL is refused before it reaches the server")
    func nulRefused() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let error = await #expect(throws: PostgresError.self) {
                try await connection.query("SELECT $1::text", [.text("a\u{0}b")])
            }
            #expect(error?.kind == .other)
            #expect(connection.isBroken == false)
        }
    }

    @Test("NULL binds decode to nil as optionals and throw a decoding error naming the column otherwise")
    func nulls() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let rows = try await connection.query("SELECT $1::text AS maybe, $2::int8 AS number", [.null, nil])
            let row = try #require(rows.rows.first)
            #expect(row.isNull("maybe"))
            #expect(try row.decode("maybe", as: String?.self) == nil)
            #expect(try row.decode("number", as: Int64?.self) == nil)
            let error = #expect(throws: PostgresError.self) { try row.decode("maybe", as: String.self) }
            #expect(error?.kind == .decoding)
            #expect(error?.message.contains("\"maybe\"") == true)
            let missing = #expect(throws: PostgresError.self) { try row.decode("absent", as: String?.self) }
            #expect(missing?.kind == .decoding)
        }
    }

    @Test("bytea round-trips all 256 byte values and the empty value")
    func byteaRoundTrip() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let all = (0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) }
            let rows = try await connection.query(
                "SELECT $1::bytea AS data, length($1::bytea) AS n, $2::bytea AS empty", [.bytea(all), .bytea([])])
            let row = try #require(rows.rows.first)
            #expect(try row.decode("data", as: [UInt8].self) == all)
            #expect(try row.decode("n", as: Int.self) == 512)
            #expect(try row.decode("empty", as: [UInt8].self) == [])
        }
    }

    @Test("jsonb binds are parsed by the server and can be queried into")
    func jsonb() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let rows = try await connection.query(
                "SELECT $1->'items'->>1 AS second, jsonb_typeof($1) AS kind, $1 AS whole",
                [.jsonb(#"{"items": [1, "it's \"quoted\" 🧾"], "n": null}"#)])
            let row = try #require(rows.rows.first)
            #expect(try row.decode("second", as: String.self) == #"it's "quoted" 🧾"#)
            #expect(try row.decode("kind", as: String.self) == "object")
            #expect(try row.decode("whole", as: String.self).contains("\"n\": null"))
            let invalid = await #expect(throws: PostgresError.self) {
                try await connection.query("SELECT $1 AS j", [.jsonb("{not json, secret-value}")])
            }
            #expect(invalid?.sqlState == "22P02")
            #expect(invalid.map { !$0.description.contains("secret-value") } == true)
        }
    }

    @Test("timestamptz keeps microseconds both ways, and server text with an offset parses exactly")
    func timestamptz() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let date = Date(timeIntervalSince1970: 1_709_210_096.789_012)
            let rows = try await connection.query(
                """
                SELECT $1 AS echoed, extract(microseconds FROM $1)::int8 AS micros,
                       '2024-02-29 12:34:56.789012+05:30'::timestamptz AS fixed,
                       '1969-12-31 23:59:59.5+00'::timestamptz AS before_epoch
                """, [.timestamptz(date)])
            let row = try #require(rows.rows.first)
            let echoed = try row.decode("echoed", as: Date.self)
            #expect(abs(echoed.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_001)
            #expect(try row.decode("micros", as: Int.self) == 56_789_012)
            let fixed = try row.decode("fixed", as: Date.self)
            #expect(abs(fixed.timeIntervalSince1970 - 1_709_190_296.789_012) < 0.000_001)
            #expect(try row.decode("before_epoch", as: Date.self).timeIntervalSince1970 == -0.5)
        }
    }

    @Test("int8 extremes, int4, bool and float8 special values round-trip")
    func scalars() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let rows = try await connection.query(
                """
                SELECT $1::int8 AS min, $2::int8 AS max, 2147483647::int4 AS i4, $3 AS yes, $4 AS no,
                       $5 AS nan, $6 AS inf, $7 AS ninf, $8 AS third
                """,
                [.int(.min), .int(.max), true, false, .double(.nan), .double(.infinity), .double(-.infinity), .double(1.0 / 3.0)])
            let row = try #require(rows.rows.first)
            #expect(try row.decode("min", as: Int64.self) == .min)
            #expect(try row.decode("max", as: Int64.self) == .max)
            #expect(try row.decode("i4", as: Int32.self) == .max)
            #expect(try row.decode("yes", as: Bool.self))
            #expect(try row.decode("no", as: Bool.self) == false)
            #expect(try row.decode("nan", as: Double.self).isNaN)
            #expect(try row.decode("inf", as: Double.self) == .infinity)
            #expect(try row.decode("ninf", as: Double.self) == -.infinity)
            #expect(try row.decode("third", as: Double.self) == 1.0 / 3.0)
            let tooBig = #expect(throws: PostgresError.self) { try row.decode("max", as: Int32.self) }
            #expect(tooBig?.kind == .decoding)
        }
    }

    @Test("affectedRows reports the command's row count")
    func affectedRows() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.execute("CREATE TABLE items (id int8 PRIMARY KEY, state text); INSERT INTO items SELECT g, 'new' FROM generate_series(1, 5) g")
            let updated = try await connection.query("UPDATE items SET state = $1 WHERE id <= $2", ["done", 3])
            #expect(updated.affectedRows == 3)
            #expect(updated.rows.isEmpty)
            let selected = try await connection.query("SELECT id FROM items")
            #expect(selected.affectedRows == 5)
            #expect(selected.columns == ["id"])
        }
    }

    @Test("server errors map to SQLSTATE kinds, with the constraint name and without DETAIL values")
    func errorKinds() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.execute("""
                CREATE TABLE accounts (id int8 PRIMARY KEY, email text NOT NULL CONSTRAINT accounts_email_key UNIQUE,
                                       balance int8 NOT NULL CONSTRAINT accounts_balance_check CHECK (balance >= 0));
                CREATE TABLE sessions (account_id int8 NOT NULL CONSTRAINT sessions_account_fkey REFERENCES accounts);
                """)
            try await connection.query("INSERT INTO accounts VALUES (1, $1, 0)", ["secret@example.com"])

            let cases: [(String, [PostgresValue], PostgresError.Kind, String?)] = [
                ("INSERT INTO accounts VALUES (2, $1, 0)", ["secret@example.com"], .uniqueViolation, "accounts_email_key"),
                ("INSERT INTO accounts VALUES (3, $1, -5)", ["x@example.com"], .checkViolation, "accounts_balance_check"),
                ("INSERT INTO accounts VALUES (4, NULL, 0)", [], .notNullViolation, nil),
                ("INSERT INTO sessions VALUES ($1)", [99], .foreignKeyViolation, "sessions_account_fkey"),
                ("SELEC 1", [], .syntaxError, nil),
                ("SELECT * FROM no_such_table", [], .undefinedTable, nil),
                ("SELECT 1; SELECT 2", [], .syntaxError, nil),
            ]
            for (sql, binds, kind, constraint) in cases {
                let error = await #expect(throws: PostgresError.self, "\(sql)") {
                    try await connection.query(sql, binds)
                }
                #expect(error?.kind == kind, "\(sql)")
                #expect(error?.sqlState?.count == 5)
                if let constraint { #expect(error?.constraint == constraint) }
                #expect(error.map { !$0.description.contains("secret") } == true, "DETAIL must not leak: \(sql)")
                #expect(error?.isRetryable == false)
            }
            let unique = try #require(await captureError { try await connection.query("INSERT INTO accounts VALUES (1, 'a', 0)") })
            #expect(unique.description.contains("23505"))
            #expect(connection.isBroken == false)
            #expect(try await connection.query("SELECT 1 AS one").rows.first?.decode("one", as: Int.self) == 1)
        }
    }

    @Test("a class 22 error does not echo the offending bind value")
    func dataExceptionRedacted() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let error = try #require(await captureError {
                try await connection.query("SELECT $1::int4", [.text("4111111111111111")])
            })
            #expect(error.sqlState?.hasPrefix("22") == true)
            #expect(!error.description.contains("4111111111111111"))
            #expect(!error.message.contains("4111111111111111"))
        }
    }

    @Test("a transaction commits on success and rolls back when the body throws")
    func transactionRollback() async throws {
        struct Boom: Error {}
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.execute("CREATE TABLE ledger (id int8 PRIMARY KEY)")
            try await connection.transaction { try await $0.query("INSERT INTO ledger VALUES (1)") }
            await #expect(throws: Boom.self) {
                try await connection.transaction { connection in
                    try await connection.query("INSERT INTO ledger VALUES (2)")
                    throw Boom()
                }
            }
            let ids = try await connection.query("SELECT id FROM ledger ORDER BY id").map { try $0.decode("id", as: Int.self) }
            #expect(ids == [1])
            #expect(connection.isBroken == false)

            // A failed statement whose error the body swallowed must not look like a commit.
            let swallowed = try #require(await captureError {
                try await connection.transaction { connection in
                    try await connection.query("INSERT INTO ledger VALUES (3)")
                    _ = try? await connection.query("INSERT INTO ledger VALUES (1)")
                }
            })
            #expect(swallowed.sqlState == "25P02")
            #expect(try await connection.query("SELECT id FROM ledger").rows.count == 1)
        }
    }

    @Test("a connection killed by the server reports connectionLost, is broken, and the error is retryable")
    func connectionLost() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let error = try #require(await captureError {
                try await connection.query("SELECT pg_terminate_backend(pg_backend_pid())")
            })
            #expect(error.kind == .connectionLost)
            #expect(error.isRetryable)
            #expect(connection.isBroken)
            let again = try #require(await captureError { try await connection.query("SELECT 1") })
            #expect(again.kind == .connectionLost)
        }
    }

    @Test("connecting to a server that is not there fails with connectionFailed")
    func connectFailure() async throws {
        _ = try TestDatabase.baseURL()
        let error = try #require(await captureError {
            _ = try await PostgresConnection.connect("postgresql:///payhook?host=/nonexistent-payhook-dir&port=1")
        })
        #expect(error.kind == .connectionFailed)
        #expect(error.isRetryable)
    }

    @Test("execute runs several statements; close makes later calls fail without trapping")
    func executeAndClose() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            try await connection.execute("CREATE TABLE a (x int); CREATE TABLE b (y int); INSERT INTO a VALUES (1)")
            #expect(try await connection.query("SELECT count(*) AS n FROM a, b").rows.first?.decode("n", as: Int.self) == 0)
            connection.close()
            #expect(connection.isBroken)
            let error = try #require(await captureError { try await connection.query("SELECT 1") })
            #expect(error.kind == .connectionLost)
        }
    }
}

/// The `PostgresError` thrown by `body`, or nil (and a recorded issue) when it did not throw one.
func captureError(_ body: () async throws -> Void) async -> PostgresError? {
    do {
        try await body()
        Issue.record("expected a PostgresError, but nothing was thrown")
    } catch let error as PostgresError {
        return error
    } catch {
        Issue.record("expected a PostgresError, got \(error)")
    }
    return nil
}
