import PayhookPostgres
import PayhookTestSupport
import Testing

/// Statements are prepared once per session behind `query`; these pin down that callers
/// cannot tell, except by speed.
@Suite("Prepared statements")
struct PreparedStatementTests {
    @Test("a statement whose table changed shape between calls still answers with the new shape")
    func survivesSchemaChange() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.query("CREATE TABLE items (id int8)")
            try await connection.query("INSERT INTO items VALUES ($1)", [.int(1)])
            let before = try await connection.query("SELECT * FROM items WHERE id = $1", [.int(1)])
            #expect(before.columns == ["id"])
            try await connection.query("ALTER TABLE items ADD COLUMN label text DEFAULT 'x'")
            let after = try await connection.query("SELECT * FROM items WHERE id = $1", [.int(1)])
            #expect(after.columns == ["id", "label"])
            #expect(try after.rows.first?.decode("label", as: String.self) == "x")
        }
    }

    @Test("errors found while preparing keep their own SQLSTATE, inside and outside transactions")
    func prepareErrorsKeepTheirKind() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            await #expect(throws: PostgresError.self) { try await connection.query("SELEC 1") }
            do {
                try await connection.query("SELECT * FROM missing_table WHERE id = $1", [.int(1)])
                Issue.record("query on a missing table succeeded")
            } catch let error as PostgresError {
                #expect(error.kind == .undefinedTable)
            }
            do {
                _ = try await connection.transaction { tx in
                    try await tx.query("SELEC $1", [.int(1)])
                }
                Issue.record("transaction with a syntax error committed")
            } catch let error as PostgresError {
                #expect(error.kind == .syntaxError)
            }
            // The session is still usable, and the same statement text works once valid.
            let rows = try await connection.query("SELECT $1::int8 AS n", [.int(7)])
            #expect(try rows.rows.first?.decode("n", as: Int64.self) == 7)
        }
    }

    @Test("the same text with different parameter types runs as separate statements")
    func differentBindTypes() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let text = try await connection.query("SELECT $1::text AS v", [.text("a")])
            let null = try await connection.query("SELECT $1::text AS v", [.null])
            let number = try await connection.query("SELECT $1::text AS v", [.int(5)])
            #expect(try text.rows.first?.decode("v", as: String.self) == "a")
            #expect(try null.rows.first?.decode("v", as: String?.self) == nil)
            #expect(try number.rows.first?.decode("v", as: String.self) == "5")
        }
    }

    @Test("a statement the server session lost is prepared again outside a transaction, and inside one fails rather than answer wrongly")
    func lostStatementIsPreparedAgain() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            let sql = "SELECT $1::int8 + 1 AS n"
            #expect(try await connection.query(sql, [.int(1)]).rows.first?.decode("n", as: Int64.self) == 2)
            // What a pooler's server switch, or DISCARD ALL, does to this client's statements.
            try await connection.execute("DEALLOCATE ALL")
            #expect(try await connection.query(sql, [.int(2)]).rows.first?.decode("n", as: Int64.self) == 3)
            // Another statement now holds the old numbered names; none may answer for this one.
            try await connection.execute("DEALLOCATE ALL")
            try await connection.execute("PREPARE payhook_1 (int8) AS SELECT $1 * 1000 AS n")
            try await connection.execute("PREPARE payhook_2 (int8) AS SELECT $1 * 1000 AS n")
            #expect(try await connection.query(sql, [.int(3)]).rows.first?.decode("n", as: Int64.self) == 4)
            try await connection.execute("DEALLOCATE ALL")
            do {
                let answer = try await connection.transaction { tx in
                    try await tx.query(sql, [.int(4)]).rows.first?.decode("n", as: Int64.self)
                }
                #expect(answer == 5)
            } catch let error as PostgresError {
                #expect(error.sqlState == "26000", "\(error)")
            }
            #expect(try await connection.query(sql, [.int(5)]).rows.first?.decode("n", as: Int64.self) == 6)
            let names = try await connection.query("SELECT name FROM pg_prepared_statements WHERE statement = $1", [.text(sql)])
            let name = try #require(try names.rows.first?.decode("name", as: String.self))
            #expect(name.hasPrefix("payhook_") && name.count == 48, "\(name)")
        }
    }

    @Test("a statement whose table changed shape is prepared again under its name on later calls, inside transactions too")
    func invalidatedStatementIsReplaced() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo)
            defer { connection.close() }
            try await connection.query("CREATE TABLE items (id int8)")
            try await connection.query("INSERT INTO items VALUES ($1)", [.int(1)])
            let sql = "SELECT * FROM items WHERE id = $1"
            #expect(try await connection.query(sql, [.int(1)]).columns == ["id"])
            try await connection.query("ALTER TABLE items ADD COLUMN label text DEFAULT 'x'")
            #expect(try await connection.query(sql, [.int(1)]).columns == ["id", "label"])
            // First inside a transaction (where the old name cannot be freed safely), then outside.
            let columns = try await connection.transaction { tx in try await tx.query(sql, [.int(1)]).columns }
            #expect(columns == ["id", "label"])
            #expect(try await connection.query(sql, [.int(1)]).columns == ["id", "label"])
            #expect(try await connection.query(sql, [.int(1)]).columns == ["id", "label"])
            // Invalidated again, and then lost by the session before it is prepared anew.
            try await connection.query("ALTER TABLE items ADD COLUMN note text DEFAULT 'y'")
            #expect(try await connection.query(sql, [.int(1)]).columns == ["id", "label", "note"])
            try await connection.execute("DEALLOCATE ALL")
            let again = try await connection.transaction { tx in try await tx.query(sql, [.int(1)]).columns }
            #expect(again == ["id", "label", "note"])
            #expect(try await connection.query(sql, [.int(1)]).columns == ["id", "label", "note"])
        }
    }
}
