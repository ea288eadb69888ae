import PayhookPostgres
import Synchronization

/// Answers `/readyz`: the database answers, accepts writes, and every embedded migration has
/// been applied.
///
/// A read-only server (a standby, or an old primary after a failover, reached through a URL
/// without `target_session_attrs=read-write`) answers `SELECT` but refuses every delivery, so
/// it does not count as ready: a load balancer stops sending until it is writable again.
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

    /// `on` on a hot standby and on a server whose `default_transaction_read_only` is on.
    static let readOnlyQuery = "SELECT current_setting('transaction_read_only') AS read_only"

    func check() async -> Status {
        if let cached = cached.withLock({ $0 }), ContinuousClock.now - cached.at < .seconds(1) {
            return cached.status
        }
        let status: Status
        do {
            let readOnly: String? = try await pool.query(Self.readOnlyQuery).rows.first?.decode("read_only")
            if readOnly != "off" {
                status = Status(ready: false, detail: "database is read-only")
            } else {
                let pending = try await migrator.pendingMigrations()
                status = pending.isEmpty
                    ? Status(ready: true, detail: "ready")
                    : Status(ready: false, detail: "\(pending.count) migration(s) pending; run payhook migrate")
            }
        } catch {
            status = Status(ready: false, detail: "database unavailable")
        }
        cached.withLock { $0 = (ContinuousClock.now, status) }
        return status
    }
}
