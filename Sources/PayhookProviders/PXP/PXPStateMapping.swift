import PayhookCore

/// PXP Unity transaction states and token statuses → canonical values: the one mapping table
/// for PXP.
///
/// All twelve states of the transactions API's `state` enum (PROVIDERS.md). The
/// `stateData.code` (`CRDnnn`) travels beside the state as the payment's status detail.
///
/// | state        | canonical   | reading                                                     |
/// |--------------|-------------|-------------------------------------------------------------|
/// | Authorised   | authorized  | approved by the issuer, funds held                          |
/// | Approved     | authorized  | approved, not yet captured                                  |
/// | Updated      | authorized  | an authorisation changed (amount, expiry), still held       |
/// | Captured     | captured    | funds taken                                                 |
/// | Executed     | captured    | the operation was carried out: the money moved              |
/// | Confirmed    | captured    | the acquirer confirmed the capture                          |
/// | Pending      | pending     | no final answer yet                                         |
/// | Refused      | declined    | declined by the issuer or the acquirer                      |
/// | Rejected     | declined    | rejected by PXP before reaching the issuer (risk, validation) |
/// | Cancelled    | canceled    | voided before capture                                       |
/// | Error        | failed      | a technical failure                                         |
/// | Refunded     | refunded    | refunded (partial vs full comes from the amounts)           |
///
/// The meanings of Approved, Updated, Executed and Confirmed are payhook's reading of their
/// names (PXP publishes the enum, not a description per value): UNCONFIRMED. Any other word,
/// including a differently cased one, maps to `nil`: the webhook decoder and the transaction
/// decoder then throw, so the event is retried and dead-lettered, never guessed.
enum PXPStateMapping {
    static func paymentStatus(_ state: String) -> PaymentStatus? {
        switch state {
        case "Authorised", "Approved", "Updated": .authorized
        case "Captured", "Executed", "Confirmed": .captured
        case "Pending": .pending
        case "Refused", "Rejected": .declined
        case "Cancelled": .canceled
        case "Error": .failed
        case "Refunded": .refunded
        default: nil
        }
    }

    /// Token status words, compared case-insensitively; UNCONFIRMED for webhooks (the token
    /// vault API uses `ACTIVE`). An absent status reads as active: a token notification
    /// without one announces a usable token.
    static func tokenStatus(_ status: String?) -> (VaultTokenStatus, VaultTokenChange)? {
        switch status?.lowercased() {
        case nil, "active", "completed": (.active, .updated)
        case "disabled", "deleted", "inactive", "suspended", "revoked": (.disabled, .disabled)
        case "expired": (.expired, .expired)
        default: nil
        }
    }
}
