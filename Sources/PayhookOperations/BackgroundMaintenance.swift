package import PayhookCore
package import PayhookPostgres

/// The loops `serve` runs besides its roles: retention and the database-backed gauges.
/// One owner, so `PayhookServer` starts and stops them with one call each.
package final class BackgroundMaintenance: Sendable {
    let retention: RetentionSweeper
    let gauges: OperationalGauges

    package init(pool: PostgresPool, policy: RetentionPolicy, metrics: MetricsRegistry, logger: Logger) {
        retention = RetentionSweeper(pool: pool, policy: policy, metrics: metrics, logger: logger.with(["role": "retention"]))
        gauges = OperationalGauges(pool: pool, metrics: metrics, logger: logger)
    }

    /// Runs both loops until `stop()`.
    package func run() async {
        async let sweeping: Void = retention.run()
        async let measuring: Void = gauges.run()
        _ = await (sweeping, measuring)
    }

    package func stop() {
        retention.stop()
        gauges.stop()
    }
}

extension BackgroundMaintenance: Service {
    package var serviceName: String { "maintenance" }
}
