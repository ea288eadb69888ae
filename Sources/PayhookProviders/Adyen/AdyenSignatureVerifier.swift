public import Foundation
public import PayhookCore
import PayhookCrypto

/// Verifies Adyen webhooks, both kinds.
///
/// - Standard webhooks (a body with `notificationItems`): every `NotificationRequestItem`
///   carries its own base64 HMAC-SHA256 in `additionalData.hmacSignature` over eight fields
///   joined by `:`. One bad item rejects the whole batch: acknowledging part of a batch is not
///   possible (one response per delivery), and a batch with a forged item is not genuine.
/// - Other webhooks (tokenization, management): the `HmacSignature` header, base64
///   HMAC-SHA256 over the raw body bytes.
///
/// Keys are the hex strings from the Customer Area, hex-decoded (``KeyEncoding/hex``).
/// Adyen signs no timestamp, so there is no freshness check and no stale policy: replay
/// protection rests on the dedup key.
public struct AdyenSignatureVerifier: WebhookVerifier {
    /// Hex-decoded HMAC keys, current first.
    public let hmacKeys: KeyRing

    /// - Parameter hmacKeys: the decoded HMAC keys, current first.
    public init(hmacKeys: KeyRing) {
        self.hmacKeys = hmacKeys
    }

    /// Checks every item of a standard webhook, or the `HmacSignature` header otherwise.
    /// `now` is unused: Adyen signs no timestamp.
    public func verify(_ request: WebhookRequest, now: Date) -> VerificationResult {
        let body = JSONDocument(request.body)
        if let body, let items = body.member("notificationItems", of: body.root) {
            return verifyStandard(body, items: items)
        }
        return verifyHeader(request, body: body)
    }

    private func verifyStandard(_ body: JSONDocument, items itemsNode: JSONDocument.Node) -> VerificationResult {
        guard let elements = body.elements(of: itemsNode), !elements.isEmpty else { return .rejected(.malformedBody) }
        var items: [AdyenNotificationItem] = []
        items.reserveCapacity(elements.count)
        for element in elements {
            guard let item = AdyenNotificationItem(body, element) else { return .rejected(.malformedBody) }
            items.append(item)
        }

        var keyIndex = 0
        for item in items {
            guard let signatureText = item.hmacSignature, !signatureText.isEmpty else {
                return .rejected(.missingSignature)
            }
            guard let signature = try? Base64.decode(signatureText), !signature.isEmpty else {
                return .rejected(.malformedSignature)
            }
            guard let index = hmacKeys.indexOfKey(signing: item.signingBytes, as: signature) else {
                return .rejected(.signatureMismatch)
            }
            // Report the oldest key used by any item: that is the one that cannot be retired yet.
            keyIndex = max(keyIndex, index)
        }

        var eventCodes: [String] = []
        for item in items where !item.eventCode.isEmpty && !eventCodes.contains(item.eventCode) {
            eventCodes.append(item.eventCode)
        }
        return .verified(VerifiedDelivery(
            dedupKey: items.count == 1 ? items[0].dedupComponent : items.map(\.dedupComponent).joined(separator: "|"),
            eventType: eventCodes.isEmpty ? nil : eventCodes.joined(separator: ","),
            keptHeaders: [:],
            warnings: [],
            keyIndex: keyIndex))
    }

    private func verifyHeader(_ request: WebhookRequest, body: JSONDocument?) -> VerificationResult {
        guard let signatureText = request.nonEmptyHeader("HmacSignature") else { return .rejected(.missingSignature) }
        guard let signature = try? Base64.decode(signatureText.trimmingASCIIWhitespace()),
              !signature.isEmpty
        else { return .rejected(.malformedSignature) }
        guard let keyIndex = hmacKeys.indexOfKey(signing: request.body, as: signature) else {
            return .rejected(.signatureMismatch)
        }

        let eventID = body.flatMap { $0.scalarText($0.member("eventId", of: $0.root)) } ?? ""
        let type = body.flatMap { $0.scalarText($0.member("type", of: $0.root)) } ?? ""
        // Tokenization events carry `eventId`; management events may not, and for those a
        // retry resends the same bytes, so the body digest identifies the delivery.
        let dedupKey = eventID.isEmpty ? DedupKey.sha256(request.body) : "\(eventID):\(type)"
        return .verified(VerifiedDelivery(
            dedupKey: dedupKey,
            eventType: type.isEmpty ? nil : type,
            keptHeaders: request.keptHeaders(["hmacsignature"]),
            warnings: [],
            keyIndex: keyIndex))
    }
}
