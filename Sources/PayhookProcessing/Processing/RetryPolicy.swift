import Foundation

/// When a failed inbound event is tried again: exponential backoff with jitter, capped.
///
/// Why jitter: after an outage every processor fails the same events at the same moment; equal
/// jitter (half fixed, half random) spreads their retries out while keeping a floor, so a
/// retry never comes back immediately. The random part is a parameter, so the math is a pure
/// function that tests drive with fixed values and an injected clock.
package struct RetryPolicy: Sendable, Equatable {
    /// The delay before the first retry (before jitter).
    var baseDelay: Duration = .seconds(1)
    /// The longest delay (before jitter).
    var maxDelay: Duration = .seconds(600)
    /// Attempts after which the event is dead (`PAYHOOK_MAX_ATTEMPTS`).
    package var maxAttempts: Int = 8

    /// The delay after the given failed attempt.
    ///
    /// - Parameters:
    ///   - attempt: the number of the attempt that just failed, 1 for the first.
    ///   - jitter: a value in `0..<1` (clamped); 0 gives half the exponential delay, values
    ///     near 1 give all of it.
    /// - Returns: `min(maxDelay, baseDelay·2^(attempt−1)) · (0.5 + jitter/2)`.
    func delay(afterAttempt attempt: Int, jitter: Double) -> Duration {
        let exponent = max(0, min(attempt - 1, 62))
        let base = baseDelay.seconds
        let uncapped = base * pow(2.0, Double(exponent))
        let capped = min(maxDelay.seconds, uncapped)
        let fraction = 0.5 + min(max(jitter, 0), 1) / 2
        return .milliseconds(Int64((capped * fraction * 1000).rounded()))
    }

    /// When the next attempt is due, from the clock's `now`.
    func nextAttempt(after attempt: Int, now: Date, jitter: Double) -> Date {
        now.addingTimeInterval(delay(afterAttempt: attempt, jitter: jitter).seconds)
    }

    /// Whether an event whose `attempt`-th attempt just failed has no attempts left.
    func isExhausted(afterAttempt attempt: Int) -> Bool { attempt >= maxAttempts }
}
