import PayhookCore

/// PXP Unity transaction states and token statuses → canonical values: the one mapping table
/// for PXP.
///
/// | state        | canonical   | source                                                        |
/// |--------------|-------------|---------------------------------------------------------------|
/// | Authorised   | authorized  | webhook and transactions API                                  |
/// | Captured     | captured    | webhook and transactions API                                  |
/// | Cancelled    | canceled    | webhook and transactions API                                  |
/// | Refused      | declined    | webhook and transactions API                                  |
/// | Error        | failed      | webhook and transactions API                                  |
/// | Pending      | pending     | transactions API enum; meaning UNCONFIRMED                     |
/// | Rejected     | declined    | transactions API enum; meaning UNCONFIRMED                     |
/// | Refunded     | refunded    | transactions API enum; partial vs full UNCONFIRMED             |
///
/// `Executed`, `Confirmed`, `Updated` and `Approved` also appear in the API's enum, apparently
/// for other intents (payouts, verifications); they map to `nil` so that the webhook decoder
/// stores them as unknown and the transaction decoder reports them, instead of guessing.
enum PXPStateMapping {
    static func paymentStatus(_ state: String) -> PaymentStatus? {
        switch state {
        case "Authorised": .authorized
        case "Captured": .captured
        case "Cancelled": .canceled
        case "Refused": .declined
        case "Error": .failed
        case "Pending": .pending
        case "Rejected": .declined
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
