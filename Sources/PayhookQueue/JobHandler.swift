/// Runs the jobs of one kind.
///
/// Why a protocol with a static kind: the kind is the contract between whoever enqueues and
/// whoever runs, so it lives on the type, once.
///
/// Threading: `run` is called concurrently for different jobs, from the worker's task group; it
/// must honour cancellation (a worker cancels handlers still running when its graceful-stop
/// deadline passes). Work must be idempotent: a job can run more than once when a worker dies
/// after the effect but before recording completion.
public protocol JobHandler: Sendable {
    /// The `jobs.kind` this handler runs.
    static var kind: String { get }
    /// Performs one attempt.
    /// - Throws: any error, which counts as `.retry(error: String(describing: error))`.
    func run(_ job: Job) async throws -> JobOutcome
}

/// A type-erased handler, also buildable from a closure (tests, small jobs).
public struct AnyJobHandler: Sendable {
    /// The `jobs.kind` it runs.
    public let kind: String
    let body: @Sendable (Job) async throws -> JobOutcome

    /// Wraps a `JobHandler`.
    public init<Handler: JobHandler>(_ handler: Handler) {
        kind = Handler.kind
        body = { job in try await handler.run(job) }
    }

    /// Runs one attempt (for wrappers that add metrics or logging around a handler).
    public func run(_ job: Job) async throws -> JobOutcome { try await body(job) }

    /// Wraps a closure for `kind`.
    public init(kind: String, run: @escaping @Sendable (Job) async throws -> JobOutcome) {
        self.kind = kind
        body = run
    }
}
