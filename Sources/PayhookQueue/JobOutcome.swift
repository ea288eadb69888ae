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
    /// Never retry: the job becomes `discarded` and a dead letter records the reason. Write it as
    /// `snake_case_code: message` to give the dead letter that code as its reason.
    case discard(reason: String)
}
