import PayhookPostgres
import PayhookProviders
import PayhookQueue

/// Why one inbound event could not be processed, and whether trying again can help.
///
/// The classification is the whole retry policy's input:
///
/// | cause                                              | retry? | dead-letter reason        |
/// |----------------------------------------------------|--------|---------------------------|
/// | webhook body does not decode (``PayloadError``)     | yes    | `payload_invalid`         |
/// | provider answers 404                               | no     | `not_found_at_provider`   |
/// | provider has no such resource (`unsupported`)      | no     | `unsupported_at_provider` |
/// | provider timeout / 5xx / 429 / connection failure  | yes    | `max_attempts_exceeded`   |
/// | provider 401/403, undecodable provider answer      | yes    | `max_attempts_exceeded`   |
/// | no API client configured for the provider          | yes    | `max_attempts_exceeded`   |
/// | database error (any)                               | yes    | `max_attempts_exceeded`   |
///
/// A body that does not decode is retried too (the issue asks for it, and a decoder fix
/// deployed while the event waits then picks it up without an operator); when the attempts
/// (`PAYHOOK_MAX_ATTEMPTS`) run out its dead letter says `payload_invalid`, not the generic
/// `max_attempts_exceeded`, so the on-call engineer knows replay needs a code change first.
/// A provider's 404 or `unsupported` cannot change by waiting, so those die at once. The
/// message never contains a body, a bind value or a credential: it is built from typed errors
/// whose descriptions are redacted by their modules.
package struct ProcessingFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whether another attempt may succeed.
    let retryable: Bool
    /// The `dead_letters.reason` when the event dies, at once or after its attempts.
    let reason: DeadLetterReason
    /// Safe to store in `last_error` and `dead_letters.error`.
    let message: String

    package var description: String { message }

    static func payload(_ error: PayloadError) -> ProcessingFailure {
        ProcessingFailure(retryable: true, reason: .payloadInvalid, message: error.description)
    }

    /// A fetched provider answer that did not decode: retried, because the provider (or a
    /// new mapping after a deploy) may fix it.
    static func fetchedPayload(_ error: PayloadError) -> ProcessingFailure {
        ProcessingFailure(retryable: true, reason: .maxAttemptsExceeded, message: "fetched state: " + error.description)
    }

    static func provider(_ error: ProviderAPIError, resource: String) -> ProcessingFailure {
        switch error.kind {
        case .notFound:
            ProcessingFailure(retryable: false, reason: .notFoundAtProvider,
                              message: "\(resource) not found at provider (\(error))")
        case .unsupported:
            ProcessingFailure(retryable: false, reason: .unsupportedAtProvider,
                              message: "\(resource) cannot be fetched from this provider (\(error))")
        case .timeout, .unavailable, .unauthorized, .invalidResponse:
            ProcessingFailure(retryable: true, reason: .maxAttemptsExceeded,
                              message: "fetching \(resource) failed: \(error)")
        }
    }

    static func noClient(_ provider: String) -> ProcessingFailure {
        ProcessingFailure(retryable: true, reason: .maxAttemptsExceeded,
                          message: "no API client is configured for \(provider)")
    }

    static func database(_ error: any Error) -> ProcessingFailure {
        let text = (error as? PostgresError).map(String.init(describing:)) ?? "unexpected error: \(type(of: error))"
        return ProcessingFailure(retryable: true, reason: .maxAttemptsExceeded, message: text)
    }
}
