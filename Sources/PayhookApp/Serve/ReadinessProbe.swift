import PayhookPostgres
import Synchronization

/// Answers `/readyz`: the database answers and every embedded migration has been applied.
///
/// The result is cached for a second so that a load balancer probing often costs at most one
/// round trip per second.
final class ReadinessProbe: Sendable {
    struct Status: Sendable {
        let ready: Bool
        let detail: String
    }

    private let pool: PostgresPool
    private let migrator: PostgresMigrator
    private let cached = Mutex<(at: ContinuousClock.Instant, status: Status)?>(nil)

    init(pool: PostgresPool, migrator: PostgresMigrator) {
        self.pool = pool
        self.migrator = migrator
    }

    func check() async -> Status {
        if let cached = cached.withLock({ $0 }), ContinuousClock.now - cached.at < .seconds(1) {
            return cached.status
        }
        let status: Status
        do {
            _ = try await pool.query("SELECT 1")
            let pending = try await migrator.pendingMigrations()
            status = pending.isEmpty
                ? Status(ready: true, detail: "ready")
                : Status(ready: false, detail: "\(pending.count) migration(s) pending; run payhook migrate")
        } catch {
            status = Status(ready: false, detail: "database unavailable")
        }
        cached.withLock { $0 = (ContinuousClock.now, status) }
        return status
    }
}
