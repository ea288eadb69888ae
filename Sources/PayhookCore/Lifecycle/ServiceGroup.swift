/// A long-running part of `payhook serve`: the listeners, the ingress writers, the processor,
/// the job worker, the scheduler, maintenance, the HTTP clients, the database pool.
///
/// `run()` returns only after `stop()`; a `run()` that returns on its own means the part has
/// ended, and ``ServiceGroup`` shuts the process down rather than keep serving without it.
/// What a part needs to know to run or stop (a worker count, a grace period) is given to it
/// when it is made, not to `run()` or `stop()`.
public protocol Service: Sendable {
    /// How logs name the service.
    var serviceName: String { get }
    /// Does the work until ``stop()``.
    func run() async
    /// Shutdown's first phase, called on every service before any ``stop()``: stop taking work
    /// from outside (a listener stops accepting connections) while work already taken goes on.
    /// Returns at once. Most services have no outside intake; the default does nothing.
    func stopIntake()
    /// Asks ``run()`` to finish what it has started and return; returns at once.
    func stop()
}

extension Service {
    public func stopIntake() {}
}

/// Runs services together until shutdown is asked for or one of them ends on its own, then
/// shuts them down in order and waits for all.
///
/// Shutdown is ordered: first every service's ``Service/stopIntake()``, then stage after stage,
/// each service of a stage is stopped in the order given and the next stage is stopped only
/// once every service of this one has returned. `PayhookServer` puts what drains work first
/// (the ingress writers lead, so deliveries already acknowledged are stored before anything
/// else stops), then what that work used: the listeners' connections, the HTTP clients, and
/// last the database pool.
public struct ServiceGroup: Sendable {
    /// Why the group stopped.
    public enum Ending: Sendable, Equatable {
        /// The shutdown the caller waited for (a signal).
        case requested
        /// This service's `run()` returned before it was asked to stop.
        case serviceEnded(String)
    }

    private let stages: [[any Service]]
    private let logger: Logger

    /// One stage: every service is stopped at once, in the order given.
    public init(_ services: [any Service], logger: Logger) {
        self.init(stages: [services], logger: logger)
    }

    /// - Parameter stages: in the order they are stopped; within a stage, the order `stop()` is called.
    public init(stages: [[any Service]], logger: Logger) {
        self.stages = stages
        self.logger = logger
    }

    private enum Event: Sendable {
        case requested
        case returned(Int)
    }

    /// Runs every service until `shutdown` returns or a service ends; `beforeStopping` runs
    /// once first, then the shutdown described on the type.
    public func run(until shutdown: @escaping @Sendable () async -> Void,
                    beforeStopping: @Sendable () -> Void = {}) async -> Ending {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let waiter = Task {
            await shutdown()
            continuation.yield(.requested)
        }
        let stages = self.stages
        let services = stages.flatMap { $0 }
        let logger = self.logger
        let ending = await withTaskGroup(of: Void.self, returning: Ending.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask {
                    await service.run()
                    continuation.yield(.returned(index))
                }
            }
            var returned = Set<Int>()
            var iterator = events.makeAsyncIterator()
            let ending: Ending
            switch await iterator.next() {
            case .returned(let index)?:
                returned.insert(index)
                ending = .serviceEnded(services[index].serviceName)
                logger.error("a service stopped on its own; shutting the process down",
                             ["service": .string(services[index].serviceName)])
            case .requested?, nil:
                ending = .requested
            }
            beforeStopping()
            for service in services { service.stopIntake() }
            var stageStart = 0
            for stage in stages {
                let indices = stageStart..<(stageStart + stage.count)
                stageStart += stage.count
                for index in indices { services[index].stop() }
                while !indices.allSatisfy(returned.contains) {
                    guard let event = await iterator.next() else { break }
                    if case .returned(let index) = event { returned.insert(index) }
                }
            }
            await group.waitForAll()
            return ending
        }
        waiter.cancel()
        continuation.finish()
        return ending
    }
}
