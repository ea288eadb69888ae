import Foundation
package import PayhookCore
package import PayhookPostgres

/// Rolls the closed hours of deliveries up into `console_delivery_hours` every `interval`, as
/// retention and the gauges run in `BackgroundMaintenance`, so the console's pages only read:
/// a GET opened while the database is in trouble never writes. Until an hour is rolled up the
/// charts count it from `inbound_events` (`ConsoleReads.timeline`), so the figures are the same
/// before and after a tick; only their cost differs.
///
/// Every `serve` process runs one. Two processes rolling the same hour is harmless: the
/// statement inserts with `ON CONFLICT DO NOTHING` and marks the hour once. The first tick waits
/// one interval, so a process that starts and stops at once writes nothing.
package final class ConsoleRollUp: Service {
    let pool: PostgresPool
    let logger: Logger
    let interval: Duration
    private let loop = PeriodicLoop()

    /// A minute: an hour closes (plus `ConsoleReads.rollUpGrace`) once an hour, so a tick finds
    /// at most one new hour; between ticks it reads the rolled hours of a week, one indexed scan.
    package init(pool: PostgresPool, logger: Logger, interval: Duration = .seconds(60)) {
        self.pool = pool
        self.logger = logger
        self.interval = interval
    }

    package var serviceName: String { "console rollup" }

    package func run() async {
        await loop.run(every: interval, first: .afterInterval) { [self] in
            do {
                try await rollUp(now: Date())
            } catch {
                logger.warning("console rollup failed; the charts read those hours from inbound_events until the next tick",
                               ["error": .string(String(describing: error))])
            }
        }
    }

    package func stop() { loop.stop() }

    /// Rolls up every closed hour of the longest window (7 days) not rolled yet, except hours
    /// that still hold a pending delivery, and drops rollup rows older than it keeps.
    func rollUp(now: Date) async throws {
        let (start, end) = ConsoleWindow.week.range(now: now)
        try await pool.withConnection { connection in
            try await ConsoleReads.rollUp(start: start, end: end, now: now, on: connection)
        }
    }
}
