import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
import Testing

/// The settings, readiness and durability checks that make payhook behave through a failover
/// (docs/deployment.md, "High availability").
@Suite("Database failover settings, readiness and durability")
struct DatabaseFailoverSettingsTests {
    private func parse(_ extra: [String: String]) throws -> Configuration {
        try Configuration.parse(environment: TestSecrets.environment.merging(extra) { $1 }) { _ in throw CocoaError(.fileNoSuchFile) }
    }

    @Test("PAYHOOK_DATABASE_POOL_SIZE and PAYHOOK_DATABASE_CALL_TIMEOUT_SECONDS: defaults, values, refusals")
    func settings() throws {
        let defaults = try parse([:])
        #expect(defaults.databasePoolSize == nil)
        #expect(defaults.databaseCallTimeout == .seconds(5))
        let given = try parse(["PAYHOOK_DATABASE_POOL_SIZE": "40", "PAYHOOK_DATABASE_CALL_TIMEOUT_SECONDS": "12"])
        #expect(given.databasePoolSize == 40)
        #expect(given.databaseCallTimeout == .seconds(12))
        let error = try #require(throws: ConfigurationError.self) {
            try parse(["PAYHOOK_DATABASE_POOL_SIZE": "1", "PAYHOOK_DATABASE_CALL_TIMEOUT_SECONDS": "0"])
        }
        #expect(Set(error.problems.map(\.variable)) == ["PAYHOOK_DATABASE_POOL_SIZE", "PAYHOOK_DATABASE_CALL_TIMEOUT_SECONDS"])
    }

    @Test("the durability warning: off, local and remote_write, no synchronous standby, or replication state not visible")
    func durabilityWarning() {
        for setting in ["off", "local", "remote_write"] {
            let warning = DatabaseDurability.Status(synchronousCommit: setting, synchronousStandbys: 1).warning
            #expect(warning?.contains("synchronous_commit is \(setting)") == true)
        }
        for setting in ["on", "remote_apply"] {
            #expect(DatabaseDurability.Status(synchronousCommit: setting, synchronousStandbys: 1).warning == nil)
            #expect(DatabaseDurability.Status(synchronousCommit: setting, synchronousStandbys: 0).warning?.contains("no synchronous standby") == true)
            #expect(DatabaseDurability.Status(synchronousCommit: setting, synchronousStandbys: nil).warning?.contains("pg_monitor") == true)
        }
    }

    @Test("read from a server without standby: the setting as the session sees it, no synchronous standby, gauges exported")
    func durabilityFromServer() async throws {
        let base = try TestDatabase.baseURL()
        let local = base + (base.contains("?") ? "&" : "?") + "options=-csynchronous_commit%3Dlocal"
        let pool = PostgresPool(conninfo: local, maxConnections: 1)
        let metrics = MetricsRegistry()
        let durability = DatabaseDurability(pool: pool, metrics: metrics, logger: .silent, interval: .seconds(60))
        let status = try await durability.read()
        #expect(status == DatabaseDurability.Status(synchronousCommit: "local", synchronousStandbys: 0))
        #expect(status.warning != nil)

        let running = Task { await durability.run() }
        let exported = await eventually(timeout: .seconds(10)) {
            metricValue(metrics.renderPrometheus(), "payhook_db_synchronous_commit", "setting=\"local\"") == 1
        }
        durability.stop()
        await running.value
        #expect(exported)
        let text = metrics.renderPrometheus()
        #expect(metricValue(text, "payhook_db_synchronous_standbys", "") == 0)
        #expect(metricValue(text, "payhook_db_synchronous_commit", "setting=\"on\"") == 0)
        await pool.close()
    }

    @Test("/readyz fails while the database is read-only, and passes on the same schema when it is writable")
    func readinessOnReadOnlyDatabase() async throws {
        let database = try await TestDatabase.migrated("readonly_ready")
        let migrator = PostgresMigrator(conninfo: database.url, migrations: try SchemaMigrations.all())
        let writable = PostgresPool(conninfo: database.url, maxConnections: 1)
        let ready = await ReadinessProbe(pool: writable, migrator: migrator).check()
        #expect(ready.ready, "\(ready.detail)")
        try #require(database.url.contains("options=-csearch_path%3D"), "the test builds on ops/test's URI form")
        // A standby, or a primary put in read-only mode: the same answer to `transaction_read_only`.
        let readOnly = PostgresPool(conninfo: database.url.replacingOccurrences(
            of: "options=-csearch_path%3D", with: "options=-cdefault_transaction_read_only%3Don%20-csearch_path%3D"), maxConnections: 1)
        let status = await ReadinessProbe(pool: readOnly, migrator: migrator).check()
        #expect(!status.ready)
        #expect(status.detail == "database is read-only")
        await writable.close()
        await readOnly.close()
    }
}
