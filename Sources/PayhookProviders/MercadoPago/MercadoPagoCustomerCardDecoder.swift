import Foundation
public import PayhookCore

/// Decodes a saved card of a Mercado Pago customer (`GET /v1/customers/{customer_id}/cards/{id}`,
/// Node SDK `src/clients/customerCard`, `CustomerCardResponse`) into the vault token it confirms.
///
/// Kept: the card id (a card id, not a payment profile), the customer, the brand
/// (`payment_method.id`), the last four digits and the expiry. `first_six_digits`, the
/// cardholder and the security code's description are never read.
public enum MercadoPagoCustomerCardDecoder {
    /// - Throws: ``PayloadError`` when the body is not a JSON object or has no `id`.
    public static func decode(_ cardJSON: [UInt8]) throws(PayloadError) -> VaultTokenSnapshot {
        let root = try PayloadNode.parse(cardJSON, provider: .mercadopago)
        let expiry = try root.cardExpiry(month: "expiration_month", year: "expiration_year")
        return VaultTokenSnapshot(
            provider: .mercadopago, account: try root["user_id"].string(), token: try root["id"].requiredString(),
            customerID: try root["customer_id"].string(), brand: try root["payment_method"]["id"].string(),
            last4: try root["last_four_digits"].string(),
            expiry: expiry,
            status: .active, occurredAt: root["date_last_updated"].date(), kind: .cardID)
    }
}
