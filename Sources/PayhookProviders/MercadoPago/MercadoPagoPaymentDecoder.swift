import Foundation
public import PayhookCore

/// Decodes a classic Mercado Pago payment (`GET /v1/payments/{id}`) into a ``PaymentSnapshot``.
///
/// Amounts are JSON numbers here (`4000.5`); their exact text is parsed as a decimal, never
/// through `Double`. Refunds are a ``RefundChange/total(_:)`` from
/// `transaction_amount_refunded`; `occurredAt` is `date_last_updated`. A saved card
/// (`card.id`) becomes a vault token with its last four digits and expiry; `first_six_digits`
/// and cardholder data are never read.
public enum MercadoPagoPaymentDecoder {
    /// - Parameter paymentJSON: the response body of `GET /v1/payments/{id}`.
    /// - Throws: ``PayloadError`` when the body is not a JSON object; `id` or `status` is
    ///   missing; an amount is malformed or has no `currency_id`; or the status is not in
    ///   ``MercadoPagoStatusMapping``.
    public static func decode(_ paymentJSON: [UInt8]) throws(PayloadError) -> PaymentSnapshot {
        let root = try PayloadNode.parse(paymentJSON, provider: .mercadopago)
        let paymentID = try root["id"].requiredString()
        let status = try root["status"].requiredString()
        let detail = try root["status_detail"].string()
        guard let mapped = MercadoPagoStatusMapping.paymentStatus(status, detail: detail) else {
            throw root["status"].error(.unrecognizedValue)
        }
        let currency = try root["currency_id"].string()
        let updatedAt = root["date_last_updated"].date()
        let account = try root["collector_id"].string()
        let brand = try root["payment_method_id"].string()

        var vaultToken: VaultTokenSnapshot?
        let card = root["card"]
        if let cardID = try card["id"].string() {
            let expiry = try card.cardExpiry(month: "expiration_month", year: "expiration_year")
            vaultToken = VaultTokenSnapshot(
                provider: .mercadopago, account: account, token: cardID,
                customerID: try root["payer"]["id"].string(), brand: brand,
                last4: try card["last_four_digits"].string(),
                expiry: expiry,
                status: .active, occurredAt: updatedAt, kind: .cardID)
        }

        return PaymentSnapshot(
            provider: .mercadopago,
            account: account,
            providerPaymentID: paymentID,
            providerOrderID: try root["order"]["id"].string(),
            merchantReference: try root["external_reference"].string(),
            amount: try root["transaction_amount"].decimalMoney(currency: currency),
            transition: .advance(mapped),
            statusDetail: detail,
            providerStatus: status,
            method: brand,
            funding: MercadoPagoStatusMapping.funding(try root["payment_type_id"].string()),
            occurredAt: updatedAt,
            refund: try root["transaction_amount_refunded"].decimalMoney(currency: currency).map { .total($0) },
            vaultToken: vaultToken)
    }
}
