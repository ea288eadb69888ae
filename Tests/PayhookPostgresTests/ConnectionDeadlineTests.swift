import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing

/// A server that stops answering (hung primary, partition) must not hold a caller: every call
/// has a client-side deadline, and a connection that missed one is never reused.
/// `pg_sleep` stands in for the silent server: from the client's side the two look the same.
@Suite("Database call deadlines and read-only servers", .timeLimit(.minutes(5)))
struct ConnectionDeadlineTests {
    @Test("a call the server does not answer within the deadline fails as a lost connection, and the connection is broken")
    func callOutlivesDeadline() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo, callDeadline: .milliseconds(500))
            defer { connection.close() }
            try await connection.query("SELECT 1")
            let started = ContinuousClock.now
            let error = try #require(await captureError { try await connection.query("SELECT pg_sleep(5)") })
            let waited = ContinuousClock.now - started
            #expect(error.kind == .connectionLost, "\(error)")
            #expect(error.isRetryable)
            #expect(waited < .seconds(2), "the call was held for \(waited)")
            #expect(connection.isBroken)
        }
    }

    @Test("a short deadline armed while a longer one is pending still fires on time")
    func shorterDeadlineWhileLongerPending() async throws {
        try await TestDatabase.withSchema { conninfo in
            let long = try await PostgresConnection.connect(conninfo, callDeadline: .seconds(8))
            let short = try await PostgresConnection.connect(conninfo, callDeadline: .milliseconds(500))
            defer {
                long.close()
                short.close()
            }
            let pending = Task { try? await long.query("SELECT pg_sleep(3)") }
            try await Task.sleep(for: .milliseconds(200))
            let started = ContinuousClock.now
            let error = try #require(await captureError { try await short.query("SELECT pg_sleep(5)") })
            #expect(error.kind == .connectionLost)
            #expect(ContinuousClock.now - started < .seconds(2), "the short deadline waited for the long one")
            _ = await pending.value
            #expect(!long.isBroken, "the long call finished within its deadline")
        }
    }

    @Test("a call that answers in time is unaffected by the deadline, call after call")
    func callsWithinDeadline() async throws {
        try await TestDatabase.withSchema { conninfo in
            let connection = try await PostgresConnection.connect(conninfo, callDeadline: .seconds(2))
            defer { connection.close() }
            for _ in 0..<50 { try await connection.query("SELECT 1") }
            try await connection.query("SELECT pg_sleep(0.3)")
            #expect(!connection.isBroken)
        }
    }

    @Test("a COMMIT that outlives the deadline fails retryably and the connection is discarded")
    func commitOutlivesDeadline() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, callDeadline: .milliseconds(500))
            try await pool.query("CREATE TABLE marks (id int8 PRIMARY KEY)")
            // A deferred constraint trigger that sleeps runs at COMMIT: the server is silent then.
            try await pool.query("""
                CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$
                """)
            try await pool.query("""
                CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON marks DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION slow_commit()
                """)
            let started = ContinuousClock.now
            let error = try #require(await captureError {
                try await pool.transaction { connection in _ = try await connection.query("INSERT INTO marks VALUES (1)") }
            })
            #expect(error.kind == .connectionLost, "\(error)")
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(pool.statistics.open == 0, "the connection that missed its deadline went back to the pool")
            await pool.close()
        }
    }

    @Test("the pool discards a connection that missed its deadline; the next call gets a new session")
    func poolReplacesConnection() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, callDeadline: .milliseconds(500))
            let first: Int32 = try await pool.query("SELECT pg_backend_pid() AS pid").rows[0].decode("pid")
            let error = try #require(await captureError { try await pool.query("SELECT pg_sleep(5)") })
            #expect(error.kind == .connectionLost)
            #expect(pool.statistics.open == 0)
            let second: Int32 = try await pool.query("SELECT pg_backend_pid() AS pid").rows[0].decode("pid")
            #expect(second != first)
            await pool.close()
        }
    }

    @Test("a connection lost at its deadline takes the pool's idle connections with it: they went to the same server")
    func lostConnectionDrainsIdle() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 3, callDeadline: .milliseconds(500))
            let holding = Latch()
            let held = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<3 { group.addTask { try await pool.withConnection { _ in await holding.wait() } } }
                    try await group.waitForAll()
                }
            }
            #expect(await eventually { pool.statistics.inUse == 3 })
            holding.open()
            try await held.value
            #expect(pool.statistics.idle == 3)
            let error = try #require(await captureError { try await pool.query("SELECT pg_sleep(5)") })
            #expect(error.kind == .connectionLost)
            #expect(pool.statistics == PostgresPoolStatistics(open: 0, idle: 0, inUse: 0, waiting: 0))
            try await pool.query("SELECT 1")
            await pool.close()
        }
    }

    @Test("a read-only server (SQLSTATE 25006) counts as lost: retryable, and the session is not reused")
    func readOnlyServer() async throws {
        try await TestDatabase.withSchema { conninfo in
            let pool = PostgresPool(conninfo: conninfo, maxConnections: 1)
            let error = try #require(await captureError {
                try await pool.withConnection { connection in
                    // What a standby, or a demoted primary, answers to every write.
                    try await connection.execute("SET default_transaction_read_only = on")
                    try await connection.query("CREATE TABLE refused (id int8)")
                }
            })
            #expect(error.sqlState == "25006")
            #expect(error.kind == .connectionLost)
            #expect(error.isRetryable)
            #expect(pool.statistics.open == 0, "a session on a read-only server went back to the pool")
            // The next session is a new one, which can write.
            try await pool.query("CREATE TABLE accepted (id int8)")
            await pool.close()
        }
    }
}

/// Where `DATABASE_URL` is silent, payhook connects with a short connect timeout and TCP
/// keepalives; whatever the URL says wins.
@Suite("Connection defaults")
struct ConnectionDefaultsTests {
    private func resolved(_ conninfo: String) throws -> [String: String] {
        Dictionary(try PostgresConnectionDefaults.resolve(conninfo).map { ($0.keyword, $0.value) },
                   uniquingKeysWith: { first, _ in first })
    }

    @Test("a URL that is silent gets every default")
    func silentURL() throws {
        let parameters = try resolved("postgresql://db1.internal:5432,db2.internal:5432/payhook?target_session_attrs=read-write")
        #expect(parameters["connect_timeout"] == "2")
        #expect(parameters["keepalives"] == "1")
        #expect(parameters["keepalives_idle"] == "5")
        #expect(parameters["keepalives_interval"] == "2")
        #expect(parameters["keepalives_count"] == "3")
        #expect(parameters["tcp_user_timeout"] == "10000")
        #expect(parameters["client_encoding"] == "UTF8")
        // What the URL says is kept as libpq parsed it.
        #expect(parameters["host"] == "db1.internal,db2.internal")
        #expect(parameters["port"] == "5432,5432")
        #expect(parameters["dbname"] == "payhook")
        #expect(parameters["target_session_attrs"] == "read-write")
    }

    @Test("a URL's own values win over the defaults, each keyword once")
    func urlWins() throws {
        let list = try PostgresConnectionDefaults.resolve(
            "postgresql:///payhook?host=/run/pg&connect_timeout=15&keepalives_idle=60&tcp_user_timeout=0")
        #expect(list.filter { $0.keyword == "connect_timeout" }.map(\.value) == ["15"])
        #expect(list.filter { $0.keyword == "keepalives_idle" }.map(\.value) == ["60"])
        #expect(list.filter { $0.keyword == "tcp_user_timeout" }.map(\.value) == ["0"])
        #expect(list.filter { $0.keyword == "keepalives_count" }.map(\.value) == ["3"])
    }

    @Test("a key=value string is merged the same way, quoting included")
    func keyValueString() throws {
        let parameters = try resolved("host=/run/pg dbname=payhook keepalives=0 options='-c search_path=a'")
        #expect(parameters["keepalives"] == "0")
        #expect(parameters["keepalives_idle"] == "5")
        #expect(parameters["connect_timeout"] == "2")
        #expect(parameters["options"] == "-c search_path=a")
        #expect(parameters["host"] == "/run/pg")
    }

    @Test("a string libpq cannot parse is a connection failure naming no value")
    func unparsable() throws {
        #expect(throws: PostgresError.self) { try PostgresConnectionDefaults.resolve("host=/run/pg nonsense_keyword=1") }
        let error = try #require(throws: PostgresError.self) { try PostgresConnectionDefaults.resolve("postgresql://%zz") }
        #expect(error.kind == .connectionFailed)
    }

}
