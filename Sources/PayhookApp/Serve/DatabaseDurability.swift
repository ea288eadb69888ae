import PayhookCore
import PayhookPostgres
import Synchronization

/// Whether a 2xx from ingest survives a failover: checks the primary's replication settings at
/// start and exports them as gauges.
///
/// A 2xx means the delivery is committed. Across a failover that holds only if the standby
/// that takes over has the commit too: `synchronous_commit` at `on` or `remote_apply` with at
/// least one synchronous standby (or a managed service that replicates synchronously below
/// PostgreSQL, which this check cannot see). See docs/decisions/0001 and docs/deployment.md.
final class DatabaseDurability: Service {
    /// What the server said.
    struct Status: Sendable, Equatable {
        /// `synchronous_commit`: `on`, `remote_apply`, `remote_write`, `local` or `off`.
        var synchronousCommit: String
        /// Standbys in `pg_stat_replication` whose `sync_state` is `sync` or `quorum`; `nil` when
        /// the role may not see replication state (it needs `pg_monitor` or `pg_read_all_stats`).
        var synchronousStandbys: Int?

        /// Why an acknowledged delivery may be lost in a failover; `nil` when none is visible.
        var warning: String? {
            switch synchronousCommit {
            case "off", "local", "remote_write":
                return "synchronous_commit is \(synchronousCommit): a delivery acknowledged with 2xx may be missing on a standby that takes over"
            default:
                break
            }
            switch synchronousStandbys {
            case 0?:
                return "the database has no synchronous standby: a delivery acknowledged with 2xx may be missing on a standby that takes over (ignore if the managed service replicates synchronously below PostgreSQL)"
            case nil:
                return "cannot see replication state (grant pg_monitor to payhook's role): whether a 2xx survives a failover is unknown"
            default:
                return nil
            }
        }
    }

    static let query = """
        SELECT current_setting('synchronous_commit') AS synchronous_commit,
               CASE WHEN bool_or(state IS NULL) THEN NULL
                    ELSE count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')) END AS synchronous_standbys
        FROM pg_stat_replication
        """

    static let settings = ["on", "remote_apply", "remote_write", "local", "off"]

    let serviceName = "database durability gauges"
    private let pool: PostgresPool
    private let logger: Logger
    private let interval: Duration
    private let latest = Mutex<Status?>(nil)
    /// The status last logged, so a warning is repeated only when the status changes.
    private let logged = Mutex<Status?>(nil)
    private let loop = PeriodicLoop()

    init(pool: PostgresPool, metrics: MetricsRegistry, logger: Logger, interval: Duration = .seconds(30)) {
        self.pool = pool
        self.logger = logger
        self.interval = interval
        metrics.describe("payhook_db_synchronous_standbys", type: "gauge",
                         help: "Synchronous standbys of the primary (pg_stat_replication sync or quorum); -1 when not visible to payhook's role.")
        metrics.describe("payhook_db_synchronous_commit", type: "gauge",
                         help: "The primary's synchronous_commit setting: 1 for the current value.")
        metrics.addCollector { [weak self] in
            guard let status = self?.latest.withLock({ $0 }) else { return [] }
            return [("payhook_db_synchronous_standbys", [], Double(status.synchronousStandbys ?? -1))]
                + Self.settings.map { setting in
                    ("payhook_db_synchronous_commit", [("setting", setting)], status.synchronousCommit == setting ? 1 : 0)
                }
        }
    }

    /// Reads the settings once.
    func read() async throws -> Status {
        guard let row = try await pool.query(Self.query).rows.first else {
            throw PostgresError(kind: .other, message: "no row from the durability query")
        }
        let standbys: Int64? = try row.decode("synchronous_standbys")
        return Status(synchronousCommit: try row.decode("synchronous_commit"), synchronousStandbys: standbys.map { Int($0) })
    }

    /// Logs the warning at start (and again whenever the status changes), refreshes the gauges
    /// every `interval` until `stop()`.
    func run() async {
        await loop.run(every: interval) {
            guard let status = try? await read() else { return }
            latest.withLock { $0 = status }
            let changed = logged.withLock { logged in
                defer { logged = status }
                return logged != status
            }
            if changed, let warning = status.warning {
                logger.warning(warning, ["synchronous_commit": .string(status.synchronousCommit),
                                         "synchronous_standbys": .init(status.synchronousStandbys ?? -1)])
            }
        }
    }

    /// Ends `run` after the read in progress.
    func stop() {
        loop.stop()
    }
}
