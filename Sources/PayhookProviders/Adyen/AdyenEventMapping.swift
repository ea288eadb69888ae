import PayhookCore

/// What an Adyen event code means to payhook: the one mapping table for Adyen.
///
/// | eventCode            | success=true                          | success=false          |
/// |----------------------|---------------------------------------|------------------------|
/// | AUTHORISATION        | advance to `authorized` (+ vault token) | advance to `declined` (`reason`) |
/// | AUTHORISATION_ADJUSTMENT | authorised amount replaced by `amount.value` | modification refused |
/// | CAPTURE              | capture increment (`captured_minor`), advance to `captured` | modification refused |
/// | CAPTURE_FAILED       | capture failed (explicit transition, capture no longer counts) | same |
/// | CANCELLATION         | advance to `canceled`                 | modification refused   |
/// | TECHNICAL_CANCEL     | advance to `canceled`                 | modification refused   |
/// | CANCEL_OR_REFUND     | `modification.action`: refund → refund increment, otherwise `canceled` | modification refused |
/// | REFUND               | refund increment (`partially_refunded` floor) | modification refused |
/// | REFUND_FAILED        | refund failed (explicit transition, increment removed) | same |
/// | REFUNDED_REVERSED    | the refund's money came back: as REFUND_FAILED | same       |
/// | NOTIFICATION_OF_CHARGEBACK, REQUEST_FOR_INFORMATION | notice (history only) | same |
/// | CHARGEBACK, SECOND_CHARGEBACK, PREARBITRATION_LOST | a chargeback: advance to `charged_back` | same |
/// | CHARGEBACK_REVERSED, PREARBITRATION_WON | a chargeback reversed (explicit) | same      |
/// | OFFER_CLOSED         | advance to `expired` (an open payment ended) | same            |
/// | RECURRING_CONTRACT   | vault token created                   | unknown                |
/// | PENDING              | advance to `pending`                  | same                   |
/// | EXPIRE               | advance to `expired`                  | same                   |
/// | anything else        | unknown (stored, never an error)      | unknown                |
enum AdyenEventMapping {
    enum Meaning: Equatable {
        case status(StatusTransition)
        case cancelOrRefund
        case refund
        case refundFailed
        case capture
        case captureFailed
        case authorisationAdjustment
        case recurringContract
    }

    /// The meaning of one notification item; `nil` for codes payhook does not interpret.
    static func meaning(eventCode: String, success: Bool) -> Meaning? {
        switch (eventCode, success) {
        case ("AUTHORISATION", true): .status(.advance(.authorized))
        case ("AUTHORISATION", false): .status(.advance(.declined))
        case ("AUTHORISATION_ADJUSTMENT", true): .authorisationAdjustment
        case ("CAPTURE", true): .capture
        case ("CAPTURE_FAILED", _): .captureFailed
        case ("CANCELLATION", true), ("TECHNICAL_CANCEL", true): .status(.advance(.canceled))
        case ("CANCEL_OR_REFUND", true): .cancelOrRefund
        case ("REFUND", true): .refund
        case ("REFUND_FAILED", _), ("REFUNDED_REVERSED", _): .refundFailed
        case ("CAPTURE", false), ("CANCELLATION", false), ("TECHNICAL_CANCEL", false),
             ("CANCEL_OR_REFUND", false), ("REFUND", false), ("AUTHORISATION_ADJUSTMENT", false):
            .status(.modificationRefused)
        case ("CHARGEBACK", _), ("SECOND_CHARGEBACK", _), ("PREARBITRATION_LOST", _): .status(.advance(.chargedBack))
        case ("CHARGEBACK_REVERSED", _), ("PREARBITRATION_WON", _): .status(.chargebackReversed)
        case ("NOTIFICATION_OF_CHARGEBACK", _), ("REQUEST_FOR_INFORMATION", _): .status(.notice)
        case ("OFFER_CLOSED", _): .status(.advance(.expired))
        case ("RECURRING_CONTRACT", true): .recurringContract
        case ("PENDING", _): .status(.advance(.pending))
        case ("EXPIRE", _): .status(.advance(.expired))
        default: nil
        }
    }

    /// Tokenization webhook `type` → what happened to the token and its resulting status.
    /// `alreadyExisting` means the shopper's details matched a stored token: it is active and
    /// known, so it is an update, not a creation.
    static func tokenWebhook(type: String) -> (change: VaultTokenChange, status: VaultTokenStatus)? {
        switch type {
        case "recurring.token.created": (.created, .active)
        case "recurring.token.updated": (.updated, .active)
        case "recurring.token.alreadyExisting": (.updated, .active)
        case "recurring.token.disabled": (.disabled, .disabled)
        default: nil
        }
    }
}
