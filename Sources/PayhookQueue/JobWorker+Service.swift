public import PayhookCore

/// The worker as a part of `payhook serve`: `stop()` is the graceful stop with the grace
/// period the worker was configured with.
extension JobWorker: Service {
    public var serviceName: String { "job worker" }

    public func stop() {
        shutdown(gracePeriod: configuration.shutdownGracePeriod)
    }
}
