import PayhookPostgres
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
}
