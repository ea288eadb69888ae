public import Foundation
import PayhookCore

/// A Mercado Pago webhook body: a thin pointer to the resource whose state must be fetched.
///
/// Mercado Pago webhooks carry no state: the processor reads ``resource`` and calls
/// `GET /v1/orders/{id}` or `GET /v1/payments/{id}`, then decodes the answer with
/// ``MercadoPagoOrderDecoder`` or ``MercadoPagoPaymentDecoder``.
public struct MercadoPagoNotification: Sendable, Hashable {
    /// What a notification points at.
    public enum Resource: Sendable, Hashable {
        case order(id: String)
        case payment(id: String)
        /// A topic payhook does not fetch (`merchant_order`, `subscription_preapproval`, …).
        case other(topic: String, id: String)
    }

    /// The body's `id`, as text (it can exceed what a `Double` holds).
    public let notificationID: String?
    /// The body's `type` (`payment`, `order`, …), or the legacy `topic`.
    public let topic: String
    /// `payment.updated`, `order.processed`, …
    public let action: String?
    /// `data.id`: the resource id.
    public let dataID: String
    public let liveMode: Bool?
    /// The seller's Mercado Pago user id.
    public let userID: String?
    public let createdAt: Date?

    /// `data.payment_id`: the disputed payment of a chargebacks-topic notification.
    public let dataPaymentID: String?

    /// Chargeback notifications point at what was charged back, which is what payhook
    /// fetches: an Orders chargeback (`action` `order.charged_back`, `data.id` the order) at
    /// the order, a classic one (`topic_chargebacks_wh`, `data.payment_id`) at the payment.
    /// The chargeback resource itself (`GET /v1/chargebacks/{id}`) is not read.
    public var resource: Resource {
        switch topic {
        case "order": return .order(id: dataID)
        case "payment": return .payment(id: dataID)
        case "chargebacks", "topic_chargebacks_wh":
            if let action, action.hasPrefix("order.") { return .order(id: dataID) }
            if let dataPaymentID { return .payment(id: dataPaymentID) }
            return .other(topic: topic, id: dataID)
        default: return .other(topic: topic, id: dataID)
        }
    }

    /// Decodes a webhook body.
    ///
    /// - Throws: ``PayloadError`` when the body is not a JSON object or `type` (or `topic`)
    ///   or `data.id` is missing.
    public static func decode(body: [UInt8]) throws(PayloadError) -> MercadoPagoNotification {
        let root = try PayloadNode.parse(body, provider: .mercadopago)
        guard let topic = try PayloadNode.firstString(root["type"], root["topic"]) else {
            throw root["type"].error(.missingField)
        }
        return MercadoPagoNotification(
            notificationID: try root["id"].string(),
            topic: topic,
            action: try root["action"].string(),
            dataID: try root["data"]["id"].requiredString(),
            liveMode: try root["live_mode"].bool(),
            userID: try root["user_id"].string(),
            createdAt: root["date_created"].date(),
            dataPaymentID: try root["data"]["payment_id"].string())
    }
}
