/// How long to wait after a failed attempt before the next one: exponential, capped, with jitter.
///
/// The one backoff: failed jobs and failed deliveries wait by it, and so do the infrastructure
/// retry loops (a worker's failed claims and unrecorded outcomes, the processor's failed batches,
/// the notification listener's reconnects), each with a named policy beside its loop. It lives in
/// Core so that modules below the queue use it too.
///
/// Why jitter: many jobs failing together (a provider outage) would otherwise all retry at the
/// same instant and fail together again. Loops of one process against its own database use none.
///
/// The delay for attempt `n` (the attempt that just failed, from 1) is
/// `d = min(maximum, base · 2^(n-1))`, then drawn uniformly from `[d · (1 - jitter), d]`.
/// A pure value: randomness is passed in, so the arithmetic is unit-tested.
public struct RetryPolicy: Sendable, Hashable {
    /// Delay after the first failed attempt, before jitter.
    public var base: Duration
    /// Upper bound of any delay.
    public var maximum: Duration
    /// Fraction (0…1) of the delay that is randomized away.
    public var jitter: Double

    /// 1 s doubling up to 1 h, 25 % jitter: 25 attempts span roughly a day.
    public static let standard = RetryPolicy(base: .seconds(1), maximum: .seconds(3600), jitter: 0.25)

    /// Creates a policy; `jitter` is clamped to 0…1 and negative durations count as zero.
    public init(base: Duration, maximum: Duration, jitter: Double) {
        self.base = base
        self.maximum = maximum
        self.jitter = jitter.isNaN ? 0 : min(1, max(0, jitter))
    }

    /// The wait after `attempt` failed.
    /// - Parameters:
    ///   - attempt: the failed attempt's number (values below 1 count as 1).
    ///   - unitRandom: a number in 0…1; 1 gives the full delay, 0 the most jittered one.
    public func delay(afterAttempt attempt: Int, unitRandom: Double) -> Duration {
        let baseSeconds = max(0, base.seconds)
        let maximumSeconds = max(0, maximum.seconds)
        let exponent = Double(max(1, attempt) - 1)
        // pow overflows to +inf for large attempts, which min() turns into the cap.
        let raw = min(maximumSeconds, baseSeconds * pow2(exponent))
        let random = unitRandom.isNaN ? 1 : min(1, max(0, unitRandom))
        return .seconds(raw * (1 - jitter) + raw * jitter * random)
    }

    /// The wait after `attempt` failed, with the system random generator.
    public func delay(afterAttempt attempt: Int) -> Duration {
        delay(afterAttempt: attempt, unitRandom: Double.random(in: 0...1))
    }

    private func pow2(_ exponent: Double) -> Double {
        exponent >= 1024 ? .infinity : Double(sign: .plus, exponent: Int(exponent), significand: 1)
    }
}
