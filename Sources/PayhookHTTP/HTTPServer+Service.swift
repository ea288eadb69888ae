public import PayhookCore

/// A started listener as a part of `payhook serve`: `stopIntake()` stops accepting connections
/// (shutdown's first phase), `stop()` ends the connections left, once what answers them has
/// drained. `start()` stays separate and comes first: it binds, and can fail.
extension HTTPServer: Service {
    public var serviceName: String { configuration.name }

    /// Waits until `stop()`: the listener's own threads do the work.
    public func run() async {
        await stopped.wait()
    }

    public func stopIntake() {
        stopAccepting()
    }
}
