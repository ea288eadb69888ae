import Synchronization

/// Lets at most one log line per key through in each interval and counts the ones it holds back.
///
/// Why: some warnings repeat once per delivery. A provider retrying old deliveries, or an
/// operator's replay, sends each with its original (stale) Mercado Pago `ts`, and every one is
/// worth a metric but not a line of its own: thousands of identical lines a second would bury
/// the log. The metric still counts every occurrence; the line that does go out says how many
/// were held back since the previous one.
///
/// ```swift
/// if let heldBack = limiter.admit("mercadopago/stale_timestamp") {
///     logger.warning("…", ["suppressed": .int(Int64(heldBack))])   // right: one line per interval
/// }
/// // not: logger.warning(…) for every delivery
/// ```
///
/// Thread-safe; keys are few (provider × warning), so the table never needs pruning.
package final class LogLineLimiter: Sendable {
    private struct Entry {
        var lastAdmitted: ContinuousClock.Instant
        var heldBack: Int
    }

    private let interval: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let entries = Mutex<[String: Entry]>([:])

    /// - Parameters:
    ///   - interval: the least time between two admitted lines of one key.
    ///   - now: the clock; injected so tests need not sleep.
    package init(interval: Duration, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.interval = interval
        self.now = now
    }

    /// Whether a line for `key` may be logged now: `nil` to hold it back, otherwise how many
    /// lines of that key were held back since the last one admitted.
    package func admit(_ key: String) -> Int? {
        let instant = now()
        return entries.withLock { entries in
            guard var entry = entries[key] else {
                entries[key] = Entry(lastAdmitted: instant, heldBack: 0)
                return 0
            }
            guard instant - entry.lastAdmitted >= interval else {
                entry.heldBack += 1
                entries[key] = entry
                return nil
            }
            let heldBack = entry.heldBack
            entries[key] = Entry(lastAdmitted: instant, heldBack: 0)
            return heldBack
        }
    }
}
