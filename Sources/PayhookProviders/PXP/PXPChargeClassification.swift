import Foundation
public import PayhookCore

/// PXP Unity transaction answers → ``ChargeOutcome``: the one charge table for PXP.
///
/// | `state`                                  | `stateData.code`        | outcome      |
/// |------------------------------------------|-------------------------|--------------|
/// | `Authorised`, `Approved`, `Updated`, `Captured`, `Executed`, `Confirmed`, `Refunded` | — | succeeded |
/// | `Pending`                                | —                       | pending      |
/// | `Refused`, `Rejected`                    | in ``softDeclineCodes`` | declinedSoft |
/// | `Refused`, `Rejected`                    | any other code, or none | declinedHard |
/// | `Error`                                  | —                       | declinedSoft |
/// | `Cancelled`                              | —                       | declinedHard |
/// | any other word                           | —                       | none: the answer is invalid |
///
/// The succeeded row is every state ``PXPStateMapping`` maps to authorized, captured or
/// refunded (a charge refunded already was taken first).
///
/// UNCONFIRMED: PXP publishes no list of refusal codes that we could find. The default soft
/// set holds `CRD105` ("Not sufficient funds", seen in a PXP refusal payload) and the ISO 8583
/// issuer codes for temporary refusals (51 insufficient funds, 61 amount limit, 65 frequency
/// limit, 91 issuer unavailable, 96 system malfunction), in case PXP passes those through.
/// It is configurable (``PXPAPIClient``'s `chargeClassification`) so it can follow PXP's
/// answer without a release. Every other code is hard, for the reason
/// ``MercadoPagoChargeClassification`` gives: a soft guess risks retrying a "do not retry".
///
/// `Error` is soft: a technical failure says nothing against the card (the same judgement as
/// Adyen's `Error` without a code). `Cancelled` is hard: the transaction was voided and
/// nothing says it may pass later. A state outside PXP's enum has no outcome: the answer is
/// reported as invalid, so the charge's outcome stays unknown, it is looked up again and
/// retried with the same key, and dead-lettered if the word stays unknown; never guessed.
public struct PXPChargeClassification: Sendable, Hashable {
    /// Refusal codes worth a later `MerchantInitiatedResubmission`.
    public var softDeclineCodes: Set<String>

    public init(softDeclineCodes: Set<String> = PXPChargeClassification.defaultSoftDeclineCodes) {
        self.softDeclineCodes = softDeclineCodes
    }

    /// UNCONFIRMED defaults; see the type's documentation.
    public static let defaultSoftDeclineCodes: Set<String> = ["CRD105", "51", "61", "65", "91", "96"]

    /// The table with the default soft codes.
    public static let standard = PXPChargeClassification()

    /// The outcome of a transaction state and its refusal code (see the table above); nil for a
    /// state outside PXP's enum.
    public func outcome(state: String, code: String?) -> ChargeOutcome? {
        switch state {
        case "Authorised", "Approved", "Updated", "Captured", "Executed", "Confirmed", "Refunded": .succeeded
        case "Pending": .pending
        case "Refused", "Rejected":
            if let code, softDeclineCodes.contains(code) { .declinedSoft } else { .declinedHard }
        case "Error": .declinedSoft
        case "Cancelled": .declinedHard
        default: nil
        }
    }

    /// Classifies a decoded transaction object.
    func result(_ transaction: PayloadNode) throws(PayloadError) -> ChargeResult {
        let state = try transaction["state"].requiredString()
        let code = try transaction["stateData"]["code"].string()
        guard let outcome = outcome(state: state, code: code) else { throw transaction["state"].error(.unrecognizedValue) }
        return ChargeResult(
            outcome: outcome, providerPaymentID: try transaction["systemTransactionId"].requiredString(),
            providerStatus: state, declineCode: outcome == .declinedSoft || outcome == .declinedHard ? code : nil)
    }

    /// The canonical status of the payment a successful charge made, recorded until the webhook
    /// brings the transaction's own: the webhook's reading of the same state
    /// (``PXPStateMapping``), so the two never disagree. They must not: a status never goes back
    /// (the precedence rule), so a settlement that recorded `captured` for a state the webhook
    /// reads as `authorised` would stand. A successful state the mapping reads as neither
    /// (`Refunded`) or does not know is recorded as authorised, as before.
    public static func paymentStatus(ofSuccess state: String) -> PaymentStatus {
        PXPStateMapping.paymentStatus(state) == .captured ? .captured : .authorized
    }
}
