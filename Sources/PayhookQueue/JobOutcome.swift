/// What a handler decided about one attempt.
///
/// A handler that throws is treated as `.retry` with the error's description, so make error
/// descriptions free of secrets, card data and request bodies: they are stored in `jobs.errors`
/// and, for the last attempt, in `dead_letters.error`, where operators read them.
public enum JobOutcome: Sendable, Hashable {
    /// Done; the job becomes `succeeded`.
    case succeeded
    /// This attempt failed: retried with backoff, or discarded and dead-lettered after the last
    /// attempt. The text is appended to `jobs.errors`.
    case retry(error: String)
    /// Not now, and not a failure: run again after the duration without counting an attempt.
    case snooze(Duration)
    /// Never retry: the job becomes `discarded` and a dead letter records `reason`. The message
    /// is for operators (no secrets); see `recordedError` for the text stored.
    ///
    /// ```swift
    /// return .discard(reason: "not_found: no order \(id)")        // wrong: a code parsed out of text
    /// return .discard(.notFound, message: "no order \(id)")        // right
    /// ```
    case discard(DeadLetterReason, message: String)

    /// The text appended to `jobs.errors` (and, for a discard, stored as `dead_letters.error`):
    /// a retry's error; a discard's message after its code (`not_found: no order 42`), or alone
    /// for `discarded_by_handler`; nil for the other outcomes.
    public var recordedError: String? {
        switch self {
        case .retry(let error): error
        case .discard(.discardedByHandler, let message): message
        case .discard(let reason, let message): "\(reason.rawValue): \(message)"
        case .succeeded, .snooze: nil
        }
    }
}
