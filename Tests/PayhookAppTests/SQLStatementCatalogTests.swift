import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp

/// Every named statement against the migrated schema: a renamed column, or a parameter whose
/// type PostgreSQL cannot infer, fails here under the statement's name instead of in production.
@Suite("SQL statement catalog", .timeLimit(.minutes(5)))
struct SQLStatementCatalogTests {
    @Test("every named SQL statement prepares against the migrated schema")
    func prepareAll() async throws {
        let database = try await TestDatabase.migrated("sql_catalog")
        let connection = try await PostgresConnection.connect(database.url)
        defer { connection.close() }
        for (name, sql) in SQLStatementCatalog.statements {
            do {
                // PREPARE parses and plans without values for the `$n` parameters.
                try await connection.execute("PREPARE \"\(name)\" AS \(sql)")
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
    }

    @Test("every set holds statements only, at least one, under names no other statement has")
    func setsAreWellFormed() {
        for set in SQLStatementCatalog.sets {
            #expect(!set.statements.isEmpty, "\(set) lists no statement")
            #expect(set.storedPropertyCount == set.statements.count, "\(set) stores something that is not a statement")
        }
        let names = SQLStatementCatalog.statements.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(Set(SQLStatementCatalog.sets.map { "\($0)" }).count == SQLStatementCatalog.sets.count)
    }
}
