public import Foundation
public import PayhookCore
public import PayhookCrypto

/// Verifies PXP Unity webhooks: `X-Signature` is base64 HMAC over
/// `X-Request-Id` + `X-Signature-Timestamp` + raw body, concatenated with no separator.
///
/// UNCONFIRMED by any public source: the hash (SHA-256 assumed, configurable), the key
/// encoding (UTF-8 assumed; choose with ``KeyRing/parse(_:encoding:)``) and the timestamp
/// format (Unix seconds, Unix milliseconds and ISO 8601 are all accepted for the freshness
/// check; the header value is signed exactly as received). PXP retries within seconds, so a
/// stale timestamp is rejected by default.
public struct PXPSignatureVerifier: WebhookVerifier {
    /// Webhook keys, current first.
    public let keys: KeyRing
    /// The HMAC hash; SHA-256 unless PXP says otherwise.
    public let algorithm: HashAlgorithm
    /// How far the timestamp may be from `now`, either direction.
    public let tolerance: Duration
    /// What to do with a verified delivery whose timestamp is outside `tolerance`.
    public let stalePolicy: StaleTimestampPolicy

    /// Headers stored with an accepted delivery.
    static let keptHeaderNames = ["x-request-id", "x-signature-timestamp", "x-signature"]

    /// - Parameters:
    ///   - keys: webhook keys, current first (parse with the configured ``KeyEncoding``).
    ///   - algorithm: the HMAC hash; UNCONFIRMED, SHA-256 assumed.
    ///   - tolerance: allowed clock distance of the timestamp.
    ///   - stalePolicy: what to do with a verified delivery whose timestamp is outside `tolerance`.
    public init(
        keys: KeyRing, algorithm: HashAlgorithm = .sha256,
        tolerance: Duration = .seconds(300), stalePolicy: StaleTimestampPolicy = .reject
    ) {
        self.keys = keys
        self.algorithm = algorithm
        self.tolerance = tolerance
        self.stalePolicy = stalePolicy
    }

    /// Checks `X-Signature`, then the freshness of `X-Signature-Timestamp`.
    public func verify(_ request: WebhookRequest, now: Date) -> VerificationResult {
        // All three headers are part of the signature; without any one of them there is
        // nothing that can be checked, which is a missing signature rather than a bad one.
        guard let signatureText = request.nonEmptyHeader("x-signature"),
              let requestID = request.nonEmptyHeader("x-request-id"),
              let timestamp = request.nonEmptyHeader("x-signature-timestamp")
        else { return .rejected(.missingSignature) }
        guard let signature = try? Base64.decode(signatureText.trimmingASCIIWhitespace()),
              !signature.isEmpty
        else { return .rejected(.malformedSignature) }

        var message: [UInt8] = []
        message.reserveCapacity(requestID.utf8.count + timestamp.utf8.count + request.body.count)
        message.append(contentsOf: requestID.utf8)
        message.append(contentsOf: timestamp.utf8)
        message.append(contentsOf: request.body)
        guard let keyIndex = keys.indexOfKey(signing: message, as: signature, algorithm: algorithm) else {
            return .rejected(.signatureMismatch)
        }
        guard let warnings = TimestampFreshness.check(
            timestamp, allowISO8601: true, now: now, tolerance: tolerance, policy: stalePolicy)
        else { return .rejected(.staleTimestamp) }

        let body = JSONDocument(request.body)
        let category = body.flatMap { $0.scalarText($0.member("eventCategory", of: $0.root)) }
        // UNCONFIRMED whether PXP retries reuse an id we could key on; a retry resends the
        // same body, so its digest identifies the delivery.
        return .verified(VerifiedDelivery(
            dedupKey: DedupKey.sha256(request.body),
            eventType: category.flatMap { $0.isEmpty ? nil : $0 },
            keptHeaders: request.keptHeaders(Self.keptHeaderNames),
            warnings: warnings,
            keyIndex: keyIndex))
    }
}
