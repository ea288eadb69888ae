public import Foundation
public import PayhookCore

/// The outcome of checking one delivery's signature.
public enum VerificationResult: Sendable, Equatable {
    /// Genuine: store it and answer 2xx once stored.
    case verified(VerifiedDelivery)
    /// Not genuine, or not checkable: answer 401, record the reason, never process it.
    case rejected(RejectionReason)
}

/// Proves that a webhook delivery came from its provider.
///
/// One implementation per provider; each is an immutable value, safe to share between the
/// ingress threads. Verifiers do no I/O and never throw: every failure is a
/// ``RejectionReason``.
public protocol WebhookVerifier: Sendable {
    /// Checks `request`'s signature with the verifier's key ring.
    /// - Parameter now: the clock reading used for timestamp freshness; injected for tests.
    func verify(_ request: WebhookRequest, now: Date) -> VerificationResult
}
