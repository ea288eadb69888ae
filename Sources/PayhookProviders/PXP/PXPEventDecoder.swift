public import Foundation
public import PayhookCore

/// A PXP Unity webhook: its envelope plus the canonical event it carries.
public struct PXPNotification: Sendable, Hashable {
    /// `eventOwner`: where in PXP's hierarchy the event belongs.
    public struct Owner: Sendable, Hashable {
        public let merchantGroup: String?
        public let merchant: String?
        public let site: String?
    }

    /// `Transaction`, `Token`, `Authentication`, `Reporting`, …
    public let category: String
    public let eventDate: Date?
    public let owner: Owner?
    public let systemTransactionID: String?
    public let merchantTransactionID: String?
    /// The transaction state word as sent (`Authorised`), for Transaction events.
    public let state: String?
    /// `.payment` for a transaction in a known state, `.vaultToken` for a token event,
    /// `.unknown` for anything else. A payment from a webhook is provisional: PXP's guidance
    /// is to confirm it with the transactions API (``PXPTransactionDecoder``).
    public let event: CanonicalEvent
}

/// Decodes PXP Unity webhook bodies
/// (`{"eventCategory","eventDate","eventData":{…},"eventOwner":{…}}`, or a JSON array of such
/// events: ``decodeAll(body:)``).
///
/// Token event fields are UNCONFIRMED by public docs; the decoder reads the token vault API's
/// names: the token from `gatewayTokenId`, `tokenId` or `schemeTokenId`; last four digits
/// only from a *masked* `maskedPrimaryAccountNumber`; expiry from `expiryMonth`/`expiryYear`.
/// An unmasked card number in that field is dropped entirely, and scheme token numbers
/// (`schemeTokenNumber`, which look like card numbers) are never read.
public enum PXPEventDecoder {
    /// - Parameter body: the raw request body.
    /// - Throws: ``PayloadError`` when the body is not a JSON object, `eventCategory` is
    ///   missing, a Transaction/Token event lacks `eventData`, its id or its state, or a
    ///   Transaction's state is not in ``PXPStateMapping``.
    public static func decode(body: [UInt8]) throws(PayloadError) -> PXPNotification {
        try decode(try PayloadNode.parse(body, provider: .pxp))
    }

    /// Every event of a delivery: PXP posts a single event object or, as in its own "Process a
    /// webhook" example, a JSON array of them. Each element is decoded on its own.
    /// - Throws: ``PayloadError`` when the body is neither an object nor a non-empty array of
    ///   objects, or any element fails ``decode(body:)``'s checks (its path is `[n]`-prefixed).
    public static func decodeAll(body: [UInt8]) throws(PayloadError) -> [PXPNotification] {
        guard let value = JSONValue.parse(body) else { throw PayloadError(provider: .pxp, code: .malformedJSON) }
        let root = PayloadNode(value: value, path: "", provider: .pxp)
        guard case .array? = root.value else { return [try decode(body: body)] }
        let elements = try root.elements()
        guard !elements.isEmpty else { throw PayloadError(provider: .pxp, code: .malformedJSON) }
        var notifications: [PXPNotification] = []
        for element in elements {
            guard case .object? = element.value else { throw element.error(.invalidField) }
            notifications.append(try decode(element))
        }
        return notifications
    }

    static func decode(_ root: PayloadNode) throws(PayloadError) -> PXPNotification {
        let category = try root["eventCategory"].requiredString()
        let eventDate = root["eventDate"].date()
        let ownerNode = root["eventOwner"]
        let owner = ownerNode.isPresent ? PXPNotification.Owner(
            merchantGroup: try ownerNode["merchantGroup"].string(),
            merchant: try ownerNode["merchant"].string(),
            site: try ownerNode["site"].string()) : nil
        let data = root["eventData"]
        let systemID = try data["systemTransactionId"].string()
        let merchantID = try data["merchantTransactionId"].string()
        let state = try data["state"].string()

        let event: CanonicalEvent
        switch category {
        case "Transaction":
            guard case .object? = data.value else { throw data.error(.missingField) }
            guard let state else { throw data["state"].error(.missingField) }
            // A state outside PXP's enum is an error, not an unknown event: the delivery is
            // retried (a release may learn the word) and dead-lettered, never guessed.
            guard let status = PXPStateMapping.paymentStatus(state) else { throw data["state"].error(.unrecognizedValue) }
            event = .payment(try PXPTransactionDecoder.snapshot(
                data, state: state, status: status, account: owner?.merchant, occurredAt: eventDate))
        case "Token":
            guard case .object? = data.value else { throw data.error(.missingField) }
            event = try tokenEvent(data, account: owner?.merchant, occurredAt: eventDate)
        default:
            event = .unknown(provider: .pxp, eventType: category, reference: systemID)
        }
        return PXPNotification(
            category: category, eventDate: eventDate, owner: owner, systemTransactionID: systemID,
            merchantTransactionID: merchantID, state: state, event: event)
    }

    static func tokenEvent(_ data: PayloadNode, account: String?, occurredAt: Date?) throws(PayloadError) -> CanonicalEvent {
        guard let token = try PayloadNode.firstString(data["gatewayTokenId"], data["tokenId"], data["schemeTokenId"]) else {
            throw data["gatewayTokenId"].error(.missingField)
        }
        let statusText = try PayloadNode.firstString(data["status"], data["tokenStatus"], data["state"])
        guard let (status, change) = PXPStateMapping.tokenStatus(statusText) else {
            return .unknown(provider: .pxp, eventType: "Token." + (statusText ?? ""), reference: token)
        }
        let expiry = try data.cardExpiry(month: "expiryMonth", year: "expiryYear")
        return .vaultToken(VaultTokenSnapshot(
            provider: .pxp,
            account: account,
            token: token,
            shopperReference: try data["shopper"]["id"].string(),
            brand: try PayloadNode.firstString(data["scheme"], data["cardScheme"], data["schemeTokenProvider"]),
            last4: maskedLast4(try data["maskedPrimaryAccountNumber"].string()),
            expiry: expiry,
            status: status,
            occurredAt: occurredAt), change: change)
    }

    /// The last four digits of a masked card number (`123456******7890` → `7890`); `nil` when
    /// the value is not masked, because then it is a full card number and must not be touched.
    static func maskedLast4(_ masked: String?) -> String? {
        guard let masked, masked.count >= 8,
              masked.contains(where: { $0 == "*" || $0 == "X" || $0 == "x" || $0 == "•" }),
              !CardDataFilter.containsCardNumber(masked)
        else { return nil }
        let last = String(masked.suffix(4))
        return last.allSatisfy(\.isASCIIDigitCharacter) ? last : nil
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
