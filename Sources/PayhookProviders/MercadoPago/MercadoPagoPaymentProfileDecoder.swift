import Foundation
public import PayhookCore

/// A customer's payment profile as Mercado Pago answers
/// `GET /v1/customers/{customer_id}/payment-profiles/{payment_profile_id}` (reference page
/// "Query a specific payment profile",
/// https://www.mercadopago.com.mx/developers/en/reference/automatic-payments/payment-profiles/retrieve-profile/get;
/// answer example in https://www.mercadopago.com.br/developers/en/docs/automatic-payments-orders/manage-profiles).
public struct MercadoPagoPaymentProfile: Sendable, Equatable {
    /// The profile's status (guide "Profile and payment method status",
    /// https://www.mercadopago.com.br/developers/en/docs/automatic-payments-orders/profile-payment-methods-status):
    /// `PENDING` until its test payment, `READY` when it has a validated card, `CANCELLED` for good.
    public let status: String
    /// The profile as a vault token: its id is the token, of kind `payment_profile`.
    public let token: VaultTokenSnapshot

    /// Only a `READY` profile has a card Mercado Pago validated for charges.
    public var isChargeable: Bool { status == "READY" }
}

/// Decodes a payment profile answer. Kept: the id, the status, and the brand of its default
/// payment method (`payment_methods[].id`, e.g. `visa`); the card ids inside are not tokens of
/// their own and are not kept.
public enum MercadoPagoPaymentProfileDecoder {
    /// - Parameter customerID: the customer the profile was asked for (the answer does not name it).
    /// - Throws: ``PayloadError`` when the body is not a JSON object or has no `id` or `status`.
    public static func decode(_ profileJSON: [UInt8], customerID: String) throws(PayloadError) -> MercadoPagoPaymentProfile {
        let root = try PayloadNode.parse(profileJSON, provider: .mercadopago)
        let status = try root["status"].requiredString().uppercased()
        let methods = try root["payment_methods"].elements()
        var defaultMethod = methods.first
        for method in methods where try method["default_method"].bool() == true { defaultMethod = method }
        let token = VaultTokenSnapshot(
            provider: .mercadopago, token: try root["id"].requiredString(), customerID: customerID,
            brand: try defaultMethod?["id"].string(),
            status: status == "CANCELLED" ? .disabled : .active, occurredAt: root["last_updated_date"].date(),
            kind: .paymentProfile)
        return MercadoPagoPaymentProfile(status: status, token: token)
    }
}
