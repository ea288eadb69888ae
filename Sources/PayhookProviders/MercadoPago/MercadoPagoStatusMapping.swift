import PayhookCore

/// Mercado Pago status words → canonical statuses: the one mapping table for Mercado Pago.
///
/// Orders API (order and each transaction use the same words):
///
/// | status            | status_detail                          | canonical            |
/// |-------------------|----------------------------------------|----------------------|
/// | created           | any                                    | pending              |
/// | processing        | any                                    | pending              |
/// | action_required   | waiting_capture                        | authorized           |
/// | action_required   | waiting_payment, waiting_transfer, …   | pending              |
/// | processed         | partially_refunded                     | partially_refunded   |
/// | processed         | refunded                               | refunded             |
/// | processed         | accredited, …                          | captured             |
/// | canceled/cancelled| any                                    | canceled             |
/// | failed            | a refusal (see `refusalDetails`, `cc_rejected_*`) | declined  |
/// | failed            | processing_error, none, anything else  | failed               |
/// | expired           | any                                    | expired              |
/// | refunded          | any                                    | refunded             |
/// | charged_back      | any                                    | charged_back         |
///
/// Classic payments (`/v1/payments`):
///
/// | status        | status_detail        | canonical          |
/// |---------------|----------------------|--------------------|
/// | pending       | any                  | pending            |
/// | in_process    | any                  | pending            |
/// | authorized    | any                  | authorized         |
/// | approved      | partially_refunded   | partially_refunded |
/// | approved      | accredited, …        | captured           |
/// | in_mediation  | any                  | captured (dispute open, funds held; the detail says so) |
/// | rejected      | cc_rejected_*, …     | declined           |
/// | cancelled     | expired              | expired            |
/// | cancelled     | any other            | canceled           |
/// | refunded      | any                  | refunded           |
/// | charged_back  | any                  | charged_back       |
///
/// Words not in a table map to `nil`; the decoders report them rather than guess.
enum MercadoPagoStatusMapping {
    /// `failed` details that mean the issuer, the scheme or risk checks refused the payment,
    /// rather than a technical failure (our classification; PROVIDERS.md lists the words).
    static let refusalDetails: Set<String> = [
        "insufficient_amount", "rejected_by_issuer", "high_risk", "card_disabled", "invalid_card_token",
        "required_call_for_authorize", "max_attempts_exceeded", "bad_filled_card_data", "rejected_by_bank",
    ]

    static func isRefusal(_ detail: String?) -> Bool {
        guard let detail else { return false }
        return refusalDetails.contains(detail) || detail.hasPrefix("cc_rejected_")
    }

    static func orderStatus(_ status: String, detail: String?) -> PaymentStatus? {
        switch status {
        case "created", "processing": .pending
        case "action_required": detail == "waiting_capture" ? .authorized : .pending
        case "processed":
            switch detail {
            case "partially_refunded": .partiallyRefunded
            case "refunded": .refunded
            default: .captured
            }
        case "canceled", "cancelled": .canceled
        case "failed": isRefusal(detail) ? .declined : .failed
        case "expired": .expired
        case "refunded": .refunded
        case "charged_back": .chargedBack
        default: nil
        }
    }

    static func paymentStatus(_ status: String, detail: String?) -> PaymentStatus? {
        switch status {
        case "pending", "in_process": .pending
        case "authorized": .authorized
        case "approved": detail == "partially_refunded" ? .partiallyRefunded : .captured
        case "in_mediation": .captured
        case "rejected": .declined
        case "cancelled", "canceled": detail == "expired" ? .expired : .canceled
        case "refunded": .refunded
        case "charged_back": .chargedBack
        default: nil
        }
    }

    /// `payment_type_id` / `payment_method.type` → funding (`credit_card` → `credit`); other
    /// types (`account_money`, `ticket`, `bank_transfer`) are kept as sent.
    static func funding(_ type: String?) -> String? {
        switch type {
        case nil: nil
        case "credit_card": "credit"
        case "debit_card": "debit"
        case "prepaid_card": "prepaid"
        case let other?: other
        }
    }
}
