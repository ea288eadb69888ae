import Foundation
public import PayhookCore

/// Decodes a Mercado Pago order (`GET /v1/orders/{id}`) into an ``OrderSnapshot``.
///
/// The order is fetched state: each transaction payment becomes a ``PaymentSnapshot`` whose
/// refunds are a ``RefundChange/total(_:)`` (the payment's `refunded_amount`, or the sum of
/// its non-failed entries in `transactions.refunds`), and whose `occurredAt` is the order's
/// `last_updated_date` so the applier can refuse an older fetch. A payment made with a saved
/// card (`payment_method.card_id`) carries a vault token for the payer's `customer_id`; the
/// one-time `payment_method.token` is never kept.
public enum MercadoPagoOrderDecoder {
    /// Amounts are decimal strings converted to ISO minor units in the order's currency, which
    /// is the order's `currency`, else `currencyOverride`, else its site's (`country_code`, see
    /// ``MercadoPagoSite``): published orders carry no `currency`.
    /// - Parameters:
    ///   - orderJSON: the response body of `GET /v1/orders/{id}`.
    ///   - currencyOverride: the configured currency of the account the order belongs to.
    /// - Throws: ``PayloadError`` when the body is not a JSON object; `id`, `status` or a
    ///   payment's `id`/`status` is missing; no currency can be told (`unknownCurrency`); an
    ///   amount is malformed, or has more decimals than the currency (`unrepresentableAmount`);
    ///   or a payment status is not in ``MercadoPagoStatusMapping`` (fetched state is not guessed).
    public static func decode(_ orderJSON: [UInt8], currencyOverride: String? = nil) throws(PayloadError) -> OrderSnapshot {
        let root = try PayloadNode.parse(orderJSON, provider: .mercadopago)
        let orderID = try root["id"].requiredString()
        let status = try root["status"].requiredString()
        let detail = try root["status_detail"].string()
        let updatedAt = root["last_updated_date"].date()
        let account = try root["user_id"].string()
        let reference = try root["external_reference"].string()
        let customerID = try root["payer"]["customer_id"].string()
        let currency = try MercadoPagoOrderCurrency(order: root, override: currencyOverride)

        var refundsByPayment: [String: Int64] = [:]
        for refund in try root["transactions"]["refunds"].elements() {
            let refundStatus = try refund["status"].string()?.lowercased()
            if let refundStatus, ["rejected", "failed", "canceled", "cancelled"].contains(refundStatus) { continue }
            guard let paymentID = try refund["transaction_id"].string(),
                  let amount = try currency.money(refund["amount"])
            else { continue }
            refundsByPayment[paymentID, default: 0] += amount.minorUnits
        }

        // An order whose status is charged_back names the disputed payments in
        // transactions.chargebacks[] (Node SDK ChargebackResponse: id, transaction_id,
        // case_id, status, references), while the payment itself may still read processed.
        let orderChargedBack = MercadoPagoStatusMapping.orderStatus(status, detail: detail) == .chargedBack
        var chargedBackPayments = Set<String>()
        for chargeback in try root["transactions"]["chargebacks"].elements() {
            if let paymentID = try chargeback["transaction_id"].string() { chargedBackPayments.insert(paymentID) }
        }

        var payments: [PaymentSnapshot] = []
        for payment in try root["transactions"]["payments"].elements() {
            let paymentID = try payment["id"].requiredString()
            let paymentStatus = try payment["status"].requiredString()
            let paymentDetail = try payment["status_detail"].string()
            guard let reported = MercadoPagoStatusMapping.orderStatus(paymentStatus, detail: paymentDetail) else {
                throw payment["status"].error(.unrecognizedValue)
            }
            var mapped = reported
            // The order's chargeback takes the money of the payments it names; with none
            // named, of every payment that had taken money.
            let tookMoney = reported == .captured || reported == .partiallyRefunded
            if orderChargedBack, chargedBackPayments.isEmpty ? tookMoney : chargedBackPayments.contains(paymentID) {
                mapped = .chargedBack
            }
            let method = payment["payment_method"]
            var refund: RefundChange?
            if let total = try currency.money(payment["refunded_amount"]) {
                refund = .total(total)
            } else if let summed = refundsByPayment[paymentID], let code = currency.code {
                refund = try? .total(Money(minorUnits: summed, currency: code))
            }
            var vaultToken: VaultTokenSnapshot?
            // A saved card is named by its card id; merchant-initiated charges need the payment
            // profile the order charged through, kept with it when the order shows one.
            let profileID = try payment["automatic_payments"]["payment_profile_id"].string()
            if let cardID = try method["card_id"].string() {
                // A payment that took the money registered the credential: its id is what
                // later merchant-initiated charges name as previous_transaction_reference.
                let succeeded = reported == .authorized || reported == .captured
                vaultToken = VaultTokenSnapshot(
                    provider: .mercadopago, account: account, token: cardID, customerID: customerID,
                    brand: try method["id"].string(), status: .active, occurredAt: updatedAt,
                    firstPaymentReference: succeeded ? paymentID : nil, kind: .cardID, paymentProfileID: profileID)
            } else if let profileID {
                vaultToken = VaultTokenSnapshot(
                    provider: .mercadopago, account: account, token: profileID, customerID: customerID,
                    brand: try method["id"].string(), status: .active, occurredAt: updatedAt, kind: .paymentProfile)
            }
            payments.append(PaymentSnapshot(
                provider: .mercadopago,
                account: account,
                providerPaymentID: paymentID,
                providerOrderID: orderID,
                merchantReference: reference,
                amount: try currency.money(payment["amount"]),
                transition: .advance(mapped),
                statusDetail: paymentDetail,
                providerStatus: paymentStatus,
                method: try method["id"].string(),
                funding: MercadoPagoStatusMapping.funding(try method["type"].string()),
                occurredAt: updatedAt,
                refund: refund,
                vaultToken: vaultToken))
        }

        return OrderSnapshot(
            provider: .mercadopago,
            account: account,
            providerOrderID: orderID,
            merchantReference: reference,
            amount: try currency.money(root["total_amount"]),
            providerStatus: status,
            providerStatusDetail: detail,
            status: MercadoPagoStatusMapping.orderStatus(status, detail: detail),
            payments: payments,
            updatedAt: updatedAt)
    }
}
