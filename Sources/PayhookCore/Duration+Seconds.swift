extension Duration {
    /// The duration in seconds, as a `Double` (precise to well under a millisecond here): for
    /// `make_interval(secs => …)` binds, `Date` arithmetic and backoff math.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
