public import PayhookCore

/// The pool as a part of `payhook serve`, in the last shutdown stage: it closes once everything
/// that queries through it has returned.
extension PostgresPool: Service {
    public var serviceName: String { "database pool" }

    /// Waits for `stop()`, then closes the pool (see `close()`) and returns.
    public func run() async {
        await closeRequested.wait()
        await close()
    }

    public func stop() {
        closeRequested.fire()
    }
}
