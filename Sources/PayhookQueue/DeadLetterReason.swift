/// Why work became a dead letter: the closed set of `dead_letters.reason` codes.
///
/// Operators filter and group letters by these codes (the CLI's `--reason`, the console), and
/// runbooks name them, so a raw value is never renamed. A discard names one of them
/// (`JobOutcome.discard(_:message:)`); the queue writes it to the letter as it is.
public enum DeadLetterReason: String, Sendable, Hashable, CaseIterable {
    // Any source.
    /// The work failed on every attempt it had (or its worker's lease ran out on the last one).
    case maxAttemptsExceeded = "max_attempts_exceeded"
    /// The stored payload (a webhook body, a job's arguments) cannot be read.
    case payloadInvalid = "payload_invalid"

    // Inbound events (`ProcessingFailure`).
    /// The provider answered 404 for the resource the webhook points at.
    case notFoundAtProvider = "not_found_at_provider"
    /// The provider offers no look-up for the resource the webhook points at.
    case unsupportedAtProvider = "unsupported_at_provider"
    /// The stored event names a provider this release does not know.
    case unknownProvider = "unknown_provider"

    // Jobs.
    /// A handler gave up without a more specific reason.
    case discardedByHandler = "discarded_by_handler"
    /// The row a job refers to (order, callback, charge) does not exist.
    case notFound = "not_found"
    /// A paid order does not match its registration, or a missing fact did not arrive in time.
    case fulfillmentMismatch = "fulfillment_mismatch"
    /// An order's own `callback_url` is not an address payhook may call.
    case callbackURLRefused = "callback_url_refused"
    /// The merchant's callback endpoint answered 410 Gone.
    case merchantGone = "merchant_gone"
    /// A charge's amount cannot be sent in its currency.
    case invalidAmount = "invalid_amount"
    /// The provider cannot perform the charge as asked.
    case unsupported = "unsupported"
    /// A charge stayed pending at the provider after every check.
    case stillPending = "still_pending"
    /// A charge's outcome is unknown and its idempotency key has expired at the provider.
    case chargeOutcomeUnknown = "charge_outcome_unknown"
    /// The provider reported a second successful charge for one subscription cycle.
    case duplicateSuccess = "duplicate_success"
}
