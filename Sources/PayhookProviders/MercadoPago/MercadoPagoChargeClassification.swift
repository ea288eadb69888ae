public import PayhookCore

/// Mercado Pago order answers to `POST /v1/orders` → ``ChargeOutcome``: the one charge table
/// for Mercado Pago.
///
/// | order `status`                       | detail (`status_detail`)                                   | outcome        |
/// |--------------------------------------|------------------------------------------------------------|----------------|
/// | `processed`                          | any                                                        | succeeded      |
/// | `processing`, `action_required`, `created` | any                                                  | pending        |
/// | `failed`                             | `insufficient_amount`, `processing_error`, `rejected_by_issuer` | declinedSoft |
/// | `failed`                             | `card_disabled`, `invalid_card_token`, `required_call_for_authorize`, `high_risk`, `max_attempts_exceeded` | declinedHard |
/// | `failed`                             | anything else, or none                                     | declinedHard   |
/// | `canceled`, `cancelled`, `expired`   | any                                                        | declinedHard   |
/// | any other word                       | any                                                        | pending        |
///
/// An unknown failure detail is hard on purpose. Soft sends the card through automatic
/// retries; if the unknown detail is a "do not retry" from the issuer, those retries cost
/// scheme penalties and annoy the cardholder. Hard stops automatic charging and asks for a
/// new card, which a human can undo. A new detail then shows up in `declineCode` and belongs in
/// this table. The same reasoning makes an order that ended canceled or expired at creation
/// hard: it did not charge and nothing says why.
///
/// A status word payhook does not know means the order exists but its meaning is unclear:
/// pending makes the caller reconcile (fetch the order) instead of charging again or giving up.
///
/// The detail is taken from the first payment of the order (`transactions.payments[0]`), which
/// names the card's failure, falling back to the order's own `status_detail`.
public enum MercadoPagoChargeClassification {
    /// Failure details worth retrying later (PROVIDERS.md: "soft").
    public static let softDetails: Set<String> = ["insufficient_amount", "processing_error", "rejected_by_issuer"]
    /// Failure details that stop charging the credential (PROVIDERS.md: "stop").
    public static let hardDetails: Set<String> = [
        "card_disabled", "invalid_card_token", "required_call_for_authorize", "high_risk", "max_attempts_exceeded",
    ]

    /// The outcome of an order status and failure detail (see the table above).
    public static func outcome(status: String, detail: String?) -> ChargeOutcome {
        switch status {
        case "processed": .succeeded
        case "processing", "action_required", "created": .pending
        case "failed":
            if let detail, softDetails.contains(detail) { .declinedSoft } else { .declinedHard }
        case "canceled", "cancelled", "expired": .declinedHard
        default: .pending
        }
    }

    /// Decodes the order a charge returned and classifies it.
    /// - Parameter expectedCurrency: the currency the charge was sent in; an answer whose
    ///   `currency` names another is not this charge's result.
    /// - Throws: ``PayloadError`` when the body is not an order (no `id` or `status`), or
    ///   (`invalidField` on `currency`) when it is in another currency than `expectedCurrency`.
    static func result(orderJSON: [UInt8], expectedCurrency: String? = nil) throws(PayloadError) -> ChargeResult {
        try result(order: try PayloadNode.parse(orderJSON, provider: .mercadopago), expectedCurrency: expectedCurrency)
    }

    /// ``result(orderJSON:expectedCurrency:)`` of an order already parsed (an order search's
    /// `data[i]`).
    static func result(order root: PayloadNode, expectedCurrency: String? = nil) throws(PayloadError) -> ChargeResult {
        if let expectedCurrency, let answered = try root["currency"].string(), answered.uppercased() != expectedCurrency.uppercased() {
            throw root["currency"].error(.invalidField)
        }
        let status = try root["status"].requiredString()
        let payments = root["transactions"]["payments"].isPresent ? try root["transactions"]["payments"].elements() : []
        var detail = try root["status_detail"].string()
        if let first = payments.first, let paymentDetail = try first["status_detail"].string() { detail = paymentDetail }
        let outcome = outcome(status: status, detail: detail)
        return ChargeResult(
            outcome: outcome, providerPaymentID: try root["id"].requiredString(), providerStatus: status,
            declineCode: outcome == .declinedSoft || outcome == .declinedHard ? detail : nil)
    }

    /// The canonical status of the order (or, in reconciliation, the fetched payment) a
    /// successful charge made, recorded until the webhook brings its own, from its status word
    /// (compared case-insensitively): `processed` (an order), `approved` (a classic payment) and
    /// `accredited` as captured, anything else as authorised.
    public static func paymentStatus(ofSuccess status: String) -> PaymentStatus {
        switch status.lowercased() {
        case "processed", "approved", "accredited": .captured
        default: .authorized
        }
    }
}
