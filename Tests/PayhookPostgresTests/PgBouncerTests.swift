import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

/// Clients sharing server sessions through Debian's PgBouncer (1.18) in transaction mode, which
/// hands each transaction, or each statement outside one, whichever server session is free.
/// Each test runs a cluster of its own with PgBouncer in front (`ops/pgbouncer`).
@Suite("Through PgBouncer in transaction mode", .timeLimit(.minutes(5)))
struct PgBouncerTests {
    /// Statements of different texts and arities, every client running all of them, odd and
    /// even clients in opposite orders: a client's first statement is not the other's first.
    static func runStatements(_ connection: PostgresConnection, client: Int64, round: Int64) async throws {
        let value = client * 1000 + round
        var steps: [@Sendable () async throws -> Void] = [
            {
                let plus = try await connection.query("SELECT $1::int8 + 1 AS n", [.int(value)])
                #expect(try plus.rows.first?.decode("n", as: Int64.self) == value + 1)
            },
            {
                let product = try await connection.query("SELECT $1::int8 * $2::int8 AS n", [.int(client), .int(round)])
                #expect(try product.rows.first?.decode("n", as: Int64.self) == client * round)
            },
            {
                let labelled = try await connection.query(
                    "SELECT $1::text || ':' || $2::int8 || ':' || $3::int8 AS s", [.text("c"), .int(client), .int(round)])
                #expect(try labelled.rows.first?.decode("s", as: String.self) == "c:\(client):\(round)")
            },
            {
                let minus = try await connection.query("SELECT $1::int8 - 1 AS n", [.int(value)])
                #expect(try minus.rows.first?.decode("n", as: Int64.self) == value - 1)
            },
        ]
        if client % 2 == 0 { steps.reverse() }
        for step in steps { try await step() }
    }

    @Test("named statements of two clients sharing one server session never collide, and the same text is adopted")
    func statementNamesDoNotCollide() async throws {
        let cluster = try await DedicatedCluster.start(port: 54361)
        try await cluster.whileRunning {
            // One server session for everyone: every statement meets the other client's.
            let bouncer = try await PgBouncer.start(in: cluster, port: 54371, poolSize: 1)
            try await bouncer.whileRunning {
                let first = try await PostgresConnection.connect(bouncer.url)
                let second = try await PostgresConnection.connect(bouncer.url)
                defer { first.close(); second.close() }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (client, connection) in [(Int64(1), first), (Int64(2), second)] {
                        group.addTask {
                            for round in Int64(1)...60 {
                                try await Self.runStatements(connection, client: client, round: round)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }

    @Test("named statements survive clients moving between several server sessions")
    func statementsFollowClientsAcrossServerSessions() async throws {
        let cluster = try await DedicatedCluster.start(port: 54362)
        try await cluster.whileRunning {
            let bouncer = try await PgBouncer.start(in: cluster, port: 54372, poolSize: 3)
            try await bouncer.whileRunning {
                var connections = [PostgresConnection]()
                for _ in 0..<6 { connections.append(try await PostgresConnection.connect(bouncer.url)) }
                defer { for connection in connections { connection.close() } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, connection) in connections.enumerated() {
                        group.addTask {
                            for round in Int64(1)...40 {
                                try await Self.runStatements(connection, client: Int64(index + 1), round: round)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }

    @Test("with pooling .transaction nothing is prepared, transactions hold, and bytea decodes in either output format")
    func transactionPoolingRunsUnnamed() async throws {
        let cluster = try await DedicatedCluster.start(port: 54363)
        try await cluster.whileRunning {
            let bouncer = try await PgBouncer.start(in: cluster, port: 54373, poolSize: 1)
            try await bouncer.whileRunning {
                let setup = try await PostgresConnection.connect(bouncer.url, pooling: .transaction)
                defer { setup.close() }
                try await setup.query("CREATE TABLE blobs (client int8, round int8, data bytea NOT NULL, PRIMARY KEY (client, round))")
                // Another client of the pooler leaves the shared server session in escape output.
                try await setup.execute("SET bytea_output TO 'escape'")
                var connections = [PostgresConnection]()
                for _ in 0..<4 { connections.append(try await PostgresConnection.connect(bouncer.url, pooling: .transaction)) }
                defer { for connection in connections { connection.close() } }
                let all = (0...255).map { UInt8($0) }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, connection) in connections.enumerated() {
                        group.addTask {
                            let client = Int64(index + 1)
                            for round in Int64(1)...25 {
                                try await Self.runStatements(connection, client: client, round: round)
                                let data = all + [UInt8(truncatingIfNeeded: round)]
                                try await connection.transaction { tx in
                                    try await tx.query("INSERT INTO blobs VALUES ($1, $2, $3)", [.int(client), .int(round), .bytea(data)])
                                    let back = try await tx.query("SELECT data FROM blobs WHERE client = $1 AND round = $2",
                                                                  [.int(client), .int(round)])
                                    #expect(try back.rows.first?.decode("data", as: [UInt8].self) == data)
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let output = try await setup.query("SHOW bytea_output")
                #expect(try output.rows.first?.decode("bytea_output", as: String.self) == "escape")
                let prepared = try await setup.query("SELECT count(*) AS n FROM pg_prepared_statements")
                #expect(try prepared.rows.first?.decode("n", as: Int.self) == 0)
                let stored = try await setup.query("SELECT count(*) AS n FROM blobs")
                #expect(try stored.rows.first?.decode("n", as: Int.self) == 100)
            }
        }
    }

    @Test("migrators started at once through the pooler apply each migration once")
    func migratorsTakeTransactionLocks() async throws {
        let cluster = try await DedicatedCluster.start(port: 54364)
        try await cluster.whileRunning {
            let bouncer = try await PgBouncer.start(in: cluster, port: 54374, poolSize: 3)
            try await bouncer.whileRunning {
                let migrations = try PostgresMigratorTests.migrations()
                let applied = try await withThrowingTaskGroup(of: [Migration].self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            try await PostgresMigrator(conninfo: bouncer.url, migrations: migrations, pooling: .transaction).migrate()
                        }
                    }
                    return try await group.reduce(into: [Migration]()) { $0 += $1 }
                }
                #expect(applied.map(\.version).sorted() == [1, 2])
                let connection = try await PostgresConnection.connect(cluster.url)
                defer { connection.close() }
                #expect(try await connection.query("SELECT count(*) AS n FROM schema_migrations").rows.first?.decode("n", as: Int.self) == 2)
                #expect(try await connection.query("SELECT count(*) AS n FROM widgets").rows.first?.decode("n", as: Int.self) == 1)
                let locks = try await connection.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory'")
                #expect(try locks.rows.first?.decode("n", as: Int.self) == 0)
                #expect(try await PostgresMigrator(conninfo: bouncer.url, migrations: migrations, pooling: .transaction)
                    .pendingMigrations().isEmpty)
            }
        }
    }
}
