import Foundation
public import PayhookCore
import PayhookCrypto

/// Decodes Adyen webhook bodies into canonical events.
///
/// Two shapes arrive on the same route: standard notifications
/// (`{"live","notificationItems":[{"NotificationRequestItem":{…}}]}`, one event per item) and
/// tokenization webhooks (`{"type":"recurring.token.…","data":{…}}`). Meanings come from
/// ``AdyenEventMapping``; unknown codes and types become `.unknown`, never errors, because
/// Adyen adds codes and every verified delivery must still be acknowledged and stored.
///
/// Card data: only `cardSummary` (last four), `expiryDate` and the brand are read; the
/// canonical values drop anything card-number-like on construction.
public enum AdyenEventDecoder {
    /// Decodes every event in one webhook body.
    ///
    /// - Parameter body: the raw request body, exactly as received.
    /// - Returns: one event per notification item, or one event for a tokenization webhook.
    /// - Throws: ``PayloadError`` when the body is not a JSON object, a required field
    ///   (`pspReference`, `eventCode`, `success`, a refund's amount, a token id) is missing,
    ///   or an amount or flag is malformed.
    public static func decode(body: [UInt8]) throws(PayloadError) -> [CanonicalEvent] {
        let root = try PayloadNode.parse(body, provider: .adyen)
        if root["notificationItems"].isPresent {
            return try root["notificationItems"].elements().map { element throws(PayloadError) in
                let item = element["NotificationRequestItem"]
                guard case .object? = item.value else { throw item.error(.missingField) }
                return try decodeItem(item)
            }
        }
        if let type = try root["type"].string() {
            return [try decodeTypedWebhook(root, type: type)]
        }
        throw root["notificationItems"].error(.missingField)
    }

    static func decodeItem(_ item: PayloadNode) throws(PayloadError) -> CanonicalEvent {
        let pspReference = try item["pspReference"].requiredString()
        let eventCode = try item["eventCode"].requiredString()
        guard let success = try item["success"].bool() else { throw item["success"].error(.missingField) }
        guard let meaning = AdyenEventMapping.meaning(eventCode: eventCode, success: success) else {
            return .unknown(provider: .adyen, eventType: eventCode, reference: pspReference)
        }

        let extra = item["additionalData"]
        let currency = try item["amount"]["currency"].string()
        let valueText = try item["amount"]["value"].string()
        let itemAmount = try Self.isoAmount(item["amount"]["value"], text: valueText, currency: currency)
        let originalReference = try item["originalReference"].string()
        let account = try item["merchantAccountCode"].string()
        let occurredAt = item["eventDate"].date()
        let method = try PayloadNode.firstString(item["paymentMethod"], extra["paymentMethod"])
        let reason = try item["reason"].string()

        // Undated: `eventDate` is not signed, and a token's date decides whether an `active`
        // report beats a `disabled` one (VaultTokenMerge). A replayed AUTHORISATION re-dated
        // after a disablement must not make the token chargeable again; the signed
        // tokenization webhooks (`createdAt` under the body HMAC) carry the dates that count.
        func token(_ reference: String?, shopper: String?) throws(PayloadError) -> VaultTokenSnapshot? {
            guard let reference else { return nil }
            return VaultTokenSnapshot(
                provider: .adyen, account: account, token: reference, shopperReference: shopper,
                brand: method, last4: try extra["cardSummary"].string(), expiry: try extra["expiryDate"].string(),
                status: .active, occurredAt: nil)
        }

        let transition: StatusTransition
        var refund: RefundChange?
        var capture: CaptureChange?
        var vaultToken: VaultTokenSnapshot?
        switch meaning {
        case .status(let mapped):
            transition = mapped
        case .refund:
            guard let itemAmount else { throw item["amount"]["value"].error(.missingField) }
            transition = .advance(.partiallyRefunded)
            refund = .increment(reference: pspReference, amount: itemAmount)
        case .cancelOrRefund:
            // Adyen says which it did in `modification.action`; without it, cancelled is the
            // safer reading because the precedence rule keeps a captured payment captured.
            if try extra["modification.action"].string()?.lowercased() == "refund", let itemAmount {
                transition = .advance(.partiallyRefunded)
                refund = .increment(reference: pspReference, amount: itemAmount)
            } else {
                transition = .advance(.canceled)
            }
        case .refundFailed:
            // REFUND_FAILED and REFUNDED_REVERSED carry the refund's pspReference: that refund
            // no longer counts.
            transition = .refundFailed
            refund = .failed(reference: pspReference)
        case .capture:
            guard let itemAmount else { throw item["amount"]["value"].error(.missingField) }
            transition = .advance(.captured)
            capture = .increment(reference: pspReference, amount: itemAmount)
        case .captureFailed:
            transition = .captureFailed
            capture = .failed(reference: pspReference)
        case .authorisationAdjustment:
            guard itemAmount != nil else { throw item["amount"]["value"].error(.missingField) }
            transition = .modificationRefused
        case .recurringContract:
            let reference = try extra["recurring.recurringDetailReference"].string() ?? pspReference
            let shopper = try PayloadNode.firstString(extra["recurring.shopperReference"], extra["shopperReference"])
            guard let snapshot = try token(reference, shopper: shopper) else {
                throw extra["recurring.recurringDetailReference"].error(.missingField)
            }
            return .vaultToken(snapshot, change: .created)
        }

        let isAuthorisation = eventCode == "AUTHORISATION"
        if isAuthorisation, success {
            let reference = try PayloadNode.firstString(
                extra["tokenization.storedPaymentMethodId"], extra["recurring.recurringDetailReference"])
            let shopper = try PayloadNode.firstString(
                extra["tokenization.shopperReference"], extra["recurring.shopperReference"])
            vaultToken = try token(reference, shopper: shopper)
        }

        // The authorised amount: stated by AUTHORISATION, replaced by a successful
        // AUTHORISATION_ADJUSTMENT (its `amount.value` is the new authorised total).
        let statesAmount = isAuthorisation || meaning == .authorisationAdjustment
        return .payment(PaymentSnapshot(
            provider: .adyen,
            account: account,
            providerPaymentID: originalReference ?? pspReference,
            merchantReference: try item["merchantReference"].string(),
            amount: statesAmount ? itemAmount : nil,
            modificationAmount: statesAmount ? nil : itemAmount,
            transition: transition,
            // On a successful AUTHORISATION `reason` is `authCode:last4:expiry`, not a reason.
            statusDetail: isAuthorisation && success ? nil : reason,
            providerStatus: eventCode,
            method: method,
            funding: try extra["fundingSource"].string()?.lowercased(),
            occurredAt: occurredAt,
            refund: refund,
            vaultToken: vaultToken,
            eventReference: Self.eventReference(
                pspReference: pspReference, originalReference: originalReference, merchantAccountCode: account,
                merchantReference: try item["merchantReference"].string(), value: valueText, currency: currency,
                eventCode: eventCode, success: success),
            capture: capture,
            replacesAmount: meaning == .authorisationAdjustment))
    }

    /// An item's identity, the same in every batch and retry that carries it: exactly the
    /// fields Adyen's HMAC covers, in the signed order. An unsigned field (`eventDate`,
    /// `additionalData`) can be changed by whoever replays a genuine item, so it must never
    /// make one event two. A later dispute stage has its own event code (`SECOND_CHARGEBACK`,
    /// `PREARBITRATION_LOST`), so it is not mistaken for the first.
    ///
    /// Stored as the event code and a SHA-256 of the joined fields: the merchant's reference
    /// is free text that may hold anything (even a card number), and the reference is kept in
    /// `payment_adjustments.reference`.
    static func eventReference(pspReference: String, originalReference: String?, merchantAccountCode: String?,
                               merchantReference: String?, value: String?, currency: String?, eventCode: String,
                               success: Bool) -> String {
        let signed = [pspReference, originalReference ?? "", merchantAccountCode ?? "", merchantReference ?? "",
                      value ?? "", currency ?? "", eventCode, success ? "true" : "false"].joined(separator: ":")
        return "adyen:\(eventCode):" + Hex.encode(Digest.hash(.sha256, Array(signed.utf8)))
    }

    /// `amount.value`, in Adyen's minor units, as ISO money (``AdyenCurrency``); `nil` when
    /// absent. A value ISO cannot hold exactly, or a currency Adyen does not list, is an
    /// invalid field: the event is dead-lettered for an operator rather than rounded.
    static func isoAmount(_ node: PayloadNode, text: String?, currency: String?) throws(PayloadError) -> Money? {
        guard let text else { return nil }
        guard let currency, let value = Int64(text) else { throw node.error(.invalidField) }
        do {
            return try AdyenCurrency.isoMoney(adyenValue: value, currency: currency)
        } catch {
            throw node.error(.invalidField)
        }
    }

    static func decodeTypedWebhook(_ root: PayloadNode, type: String) throws(PayloadError) -> CanonicalEvent {
        let eventID = try root["eventId"].string()
        guard let (change, status) = AdyenEventMapping.tokenWebhook(type: type) else {
            return .unknown(provider: .adyen, eventType: type, reference: eventID)
        }
        let data = root["data"]
        let methodType = try data["type"].string()
        // `scheme` names the card family, not a brand; storing it would overwrite `mc`/`visa`.
        let brand = methodType.flatMap { ["scheme", "card"].contains($0.lowercased()) ? nil : $0 }
        return .vaultToken(VaultTokenSnapshot(
            provider: .adyen,
            account: try data["merchantAccount"].string(),
            token: try data["storedPaymentMethodId"].requiredString(),
            shopperReference: try data["shopperReference"].string(),
            brand: brand,
            status: status,
            occurredAt: root["createdAt"].date()), change: change)
    }
}
