import Foundation
public import PayhookCore

/// Adyen `/payments` answers → ``ChargeOutcome``: the one charge table for Adyen.
///
/// | `resultCode`                    | `refusalReasonCode` / `merchantAdviceCode`                 | outcome      |
/// |---------------------------------|------------------------------------------------------------|--------------|
/// | `Authorised`                    | —                                                          | succeeded    |
/// | `Pending`, `Received`           | —                                                          | pending      |
/// | `Refused`, `Cancelled`, `Error` | merchantAdviceCode `03` or `21` (never retry), any code    | declinedHard |
/// |                                 | 5, 6, 8, 14, 20, 22, 25, 26, 31 (stop)                     | declinedHard |
/// |                                 | 11, 24, 38, 42 (needs the shopper)                         | declinedHard |
/// |                                 | 2, 4, 9, 12, 28, 29 (retry later)                          | declinedSoft |
/// |                                 | any other code                                             | declinedHard |
/// | `Error`                         | no code                                                    | declinedSoft |
/// | `Refused`, `Cancelled`          | no code                                                    | declinedHard |
/// | `RedirectShopper`, `IdentifyShopper`, `ChallengeShopper`, `PresentToShopper` | —             | declinedHard |
/// | any other word                  | —                                                          | pending      |
///
/// Codes that need the shopper (3-D Secure, CVC, authentication) are hard because a
/// merchant-initiated charge has no shopper to ask; so are the action result codes, which
/// would need the shopper to complete the payment.
///
/// `Error` without a code is soft: Adyen uses it for technical failures (acquirer or internal
/// errors) that say nothing against the card, so a later attempt may pass; stopping the
/// subscription over a processing hiccup would be worse than one more attempt. The attempt is a
/// new charge with a new idempotency key: Adyen stores this answer under the old key, so a
/// replay returns the same `Error`.
///
/// Any other code is hard for the reason ``MercadoPagoChargeClassification`` gives for unknown
/// details: a soft guess risks retrying a "do not retry"; a hard one only asks for a new card.
/// A result code payhook does not know means the payment exists in an unclear state: pending
/// makes the caller reconcile (the webhook decides) rather than charge again.
public enum AdyenChargeClassification {
    /// Refusal reason codes that stop charging the credential.
    public static let stopCodes: Set<String> = ["5", "6", "8", "14", "20", "22", "25", "26", "31"]
    /// Refusal reason codes that would need the shopper; hard for a merchant-initiated charge.
    public static let shopperCodes: Set<String> = ["11", "24", "38", "42"]
    /// Refusal reason codes worth retrying later.
    public static let retryCodes: Set<String> = ["2", "4", "9", "12", "28", "29"]
    /// Merchant advice codes that forbid any retry (Mastercard MAC 03 "do not try again",
    /// 21 "payment cancellation").
    public static let neverRetryAdviceCodes: Set<String> = ["03", "21"]

    /// The outcome of a result code, refusal reason code and merchant advice code.
    /// - Parameter merchantAdviceCode: as Adyen sends it (`"03"` or `"03: Do not try again"`);
    ///   only its leading digits count.
    public static func outcome(resultCode: String, refusalReasonCode: String?, merchantAdviceCode: String?) -> ChargeOutcome {
        switch resultCode {
        case "Authorised": return .succeeded
        case "Pending", "Received": return .pending
        case "RedirectShopper", "IdentifyShopper", "ChallengeShopper", "PresentToShopper": return .declinedHard
        case "Refused", "Cancelled", "Error": break
        default: return .pending
        }
        if let advice = adviceCode(merchantAdviceCode), neverRetryAdviceCodes.contains(advice) { return .declinedHard }
        guard let code = refusalReasonCode?.trimmingCharacters(in: .whitespaces), !code.isEmpty else {
            return resultCode == "Error" ? .declinedSoft : .declinedHard
        }
        if stopCodes.contains(code) || shopperCodes.contains(code) { return .declinedHard }
        if retryCodes.contains(code) { return .declinedSoft }
        return .declinedHard
    }

    /// The two-digit advice code at the start of Adyen's `merchantAdviceCode` text, if any.
    static func adviceCode(_ text: String?) -> String? {
        guard let text else { return nil }
        let digits = String(text.trimmingCharacters(in: .whitespaces).prefix { $0.isASCII && $0.isNumber })
        guard !digits.isEmpty, digits.count <= 2 else { return nil }
        return digits.count == 1 ? "0" + digits : digits
    }

    /// Decodes a `/payments` answer and classifies it.
    /// - Throws: ``PayloadError`` when the body has no `resultCode`.
    static func result(paymentJSON: [UInt8]) throws(PayloadError) -> ChargeResult {
        let root = try PayloadNode.parse(paymentJSON, provider: .adyen)
        let resultCode = try root["resultCode"].requiredString()
        let code = try root["refusalReasonCode"].string()
        let advice = try root["additionalData"]["merchantAdviceCode"].string()
        let outcome = outcome(resultCode: resultCode, refusalReasonCode: code, merchantAdviceCode: advice)
        var declineCode: String? = nil
        if outcome == .declinedSoft || outcome == .declinedHard {
            let mac = adviceCode(advice).map { "mac=" + $0 }
            declineCode = [code, mac].compactMap { $0 }.joined(separator: ";")
            if declineCode?.isEmpty == true { declineCode = nil }
        }
        return ChargeResult(
            outcome: outcome, providerPaymentID: try root["pspReference"].string(), providerStatus: resultCode,
            declineCode: declineCode)
    }

    /// The canonical status of the payment a successful charge made, recorded until the webhook
    /// brings the payment's own: authorised. A successful `/payments` answer is `Authorised`
    /// (the money is held); Adyen reports a capture by webhook (`CAPTURE`) on the same payment.
    public static func paymentStatus(ofSuccess resultCode: String) -> PaymentStatus {
        .authorized
    }
}
