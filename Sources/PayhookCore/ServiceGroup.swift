/// A long-running part of `payhook serve`: the ingress writers, the processor, the job worker,
/// the scheduler, maintenance.
///
/// `run()` returns only after `stop()`; a `run()` that returns on its own means the part has
/// ended, and ``ServiceGroup`` shuts the process down rather than keep serving without it.
public protocol Service: Sendable {
    /// How logs name the service.
    var serviceName: String { get }
    /// Does the work until ``stop()``.
    func run() async
    /// Asks ``run()`` to finish what it has started and return; returns at once.
    func stop()
}

/// A service made of two closures, for parts whose own API is shaped differently (a worker
/// count to pass, a grace period to give).
public struct ServiceClosures: Service {
    public let serviceName: String
    private let runBody: @Sendable () async -> Void
    private let stopBody: @Sendable () -> Void

    public init(_ name: String, run: @escaping @Sendable () async -> Void, stop: @escaping @Sendable () -> Void) {
        self.serviceName = name
        self.runBody = run
        self.stopBody = stop
    }

    public func run() async { await runBody() }
    public func stop() { stopBody() }
}

/// Runs services together until shutdown is asked for or one of them ends on its own, then
/// stops every one of them in the order given and waits for all.
///
/// The order is the graceful-shutdown order: `PayhookServer` lists the ingress writers first,
/// so deliveries already acknowledged are stored before anything else stops.
public struct ServiceGroup: Sendable {
    /// Why the group stopped.
    public enum Ending: Sendable, Equatable {
        /// The shutdown the caller waited for (a signal).
        case requested
        /// This service's `run()` returned before it was asked to stop.
        case serviceEnded(String)
    }

    private let services: [any Service]
    private let logger: Logger

    /// - Parameter services: in the order they are stopped.
    public init(_ services: [any Service], logger: Logger) {
        self.services = services
        self.logger = logger
    }

    /// Runs every service until `shutdown` returns or a service ends; `beforeStopping` runs
    /// once first (the listeners stop accepting there), then each service is stopped in order.
    public func run(until shutdown: @escaping @Sendable () async -> Void,
                    beforeStopping: @Sendable () -> Void = {}) async -> Ending {
        let (events, continuation) = AsyncStream.makeStream(of: Ending.self)
        let waiter = Task {
            await shutdown()
            continuation.yield(.requested)
        }
        let services = self.services
        let logger = self.logger
        let ending = await withTaskGroup(of: Void.self, returning: Ending.self) { group in
            for service in services {
                group.addTask {
                    await service.run()
                    continuation.yield(.serviceEnded(service.serviceName))
                }
            }
            var iterator = events.makeAsyncIterator()
            let ending = await iterator.next() ?? .requested
            if case .serviceEnded(let name) = ending {
                logger.error("a service stopped on its own; shutting the process down", ["service": .string(name)])
            }
            beforeStopping()
            for service in services { service.stop() }
            await group.waitForAll()
            return ending
        }
        waiter.cancel()
        continuation.finish()
        return ending
    }
}
