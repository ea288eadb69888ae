import Foundation
public import PayhookCore

/// Decodes a PXP Unity transaction (`GET /api/v1/transactions/…`) into a ``PaymentSnapshot``.
///
/// PXP webhooks are short-lived (ten retries in ten seconds), so fetched transactions are the
/// source of truth for reconciliation. Amount field names are partly UNCONFIRMED: the amount
/// is read from the first of `amounts.transactionValue` (documented response),
/// `amounts.transaction` (request shape) and `amounts.value`, as a decimal string or the exact
/// text of a JSON number (`50.05`), never through `Double`; the currency from
/// `amounts.currencyCode` or `amounts.currency`. A refunded total is read from
/// `amounts.refundedValue` / `amounts.refunded` when present (UNCONFIRMED names).
public enum PXPTransactionDecoder {
    /// - Parameter transactionJSON: the response body of the transactions API.
    /// - Throws: ``PayloadError`` when the body is not a JSON object; `systemTransactionId` or
    ///   `state` is missing; an amount is malformed or has no currency; or the state is not in
    ///   ``PXPStateMapping``.
    public static func decode(_ transactionJSON: [UInt8]) throws(PayloadError) -> PaymentSnapshot {
        try decode(try PayloadNode.parse(transactionJSON, provider: .pxp))
    }

    /// One transaction of a lookup's answer.
    static func decode(_ root: PayloadNode) throws(PayloadError) -> PaymentSnapshot {
        let state = try root["state"].requiredString()
        guard let status = PXPStateMapping.paymentStatus(state) else {
            throw root["state"].error(.unrecognizedValue)
        }
        return try snapshot(root, state: state, status: status, account: try root["merchant"].string(), occurredAt: nil)
    }

    /// The fields a transaction webhook's `eventData` and a fetched transaction share.
    static func snapshot(
        _ node: PayloadNode, state: String, status: PaymentStatus, account: String?, occurredAt: Date?
    ) throws(PayloadError) -> PaymentSnapshot {
        let amounts = node["amounts"]
        let currency = try PayloadNode.firstString(amounts["currencyCode"], amounts["currency"])
        let amountNode = PayloadNode.firstPresent(amounts["transactionValue"], amounts["transaction"], amounts["value"])
        let refundedNode = PayloadNode.firstPresent(amounts["refundedValue"], amounts["refunded"])
        return PaymentSnapshot(
            provider: .pxp,
            account: account,
            providerPaymentID: try node["systemTransactionId"].requiredString(),
            merchantReference: try node["merchantTransactionId"].string(),
            amount: try amountNode?.decimalMoney(currency: currency),
            transition: .advance(status),
            statusDetail: try PayloadNode.firstString(node["stateData"]["code"], node["stateMessage"]),
            providerStatus: state,
            method: try PayloadNode.firstString(node["fundingData"]["card"]["scheme"], node["fundingData"]["card"]["cardScheme"]),
            funding: try node["transactionMethod"]["fundingType"].string()?.lowercased(),
            occurredAt: occurredAt,
            refund: try refundedNode?.decimalMoney(currency: currency).map { .total($0) })
    }
}
