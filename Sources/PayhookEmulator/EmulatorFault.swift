/// A failure the emulator plays instead of (or on top of) a request's normal answer.
///
/// Faults are armed per endpoint, optionally per resource, and each is consumed by the
/// requests it applies to: `fail(next: 2, with: .status(503), on: .order, id: "ORD1")` makes
/// exactly the next two authenticated requests for that order answer 503, then the order is
/// served again. Requests rejected for their credentials do not consume faults.
public enum EmulatorFault: Sendable, Equatable {
    /// Answer this status with a provider-shaped error body. Nothing is executed or stored, so
    /// a charge retried with the same idempotency key runs for the first time afterwards.
    case status(Int)
    /// Handle the request normally, then hold the answer for this long: longer than the
    /// client's deadline, it is a timeout. A charge has executed and its result is stored
    /// under its idempotency key ("timeout after executing"), so a replay returns it.
    /// Keep it below `Configuration.handlerTimeoutSeconds`, where the server answers 503.
    case timeout(after: Duration)
    /// Answer 404 as if the resource did not exist (charges are not executed).
    case notFound
}
