package import Foundation
package import PayhookCore
package import PayhookPostgres
package import PayhookQueue

/// One event for the merchant's system (`order.paid`, `order.refunded`, `order.charged_back`,
/// `subscription.paused`, …), delivered as a signed Standard Webhooks POST by the
/// `merchant_callback` job.
package struct MerchantCallback: Sendable {
    /// The business fact's key (`order.paid.<order id>`): a fact is reported once, so a second
    /// callback with the same key is not recorded. The `webhook-id` the merchant receives is this
    /// key and a random suffix (`RestoreSafeSuffix`), made when the callback is recorded and sent
    /// on every attempt and replay, so it stays the same for one callback and never repeats
    /// after a database restore rolls the ids in the key back (migration 0019).
    var webhookID: String
    /// The event type, e.g. `order.paid`.
    var type: String
    /// The event's `data` object.
    var data: JSONOutput
    var orderID: Int64?
    var subscriptionID: Int64?
    /// Where to send it; `PAYHOOK_FULFILLMENT_URL` when nil.
    var url: String?
    /// The body's `timestamp`: when the fact happened, not when a delivery attempt ran.
    var occurredAt: Date

    package init(webhookID: String, type: String, data: JSONOutput, orderID: Int64? = nil, subscriptionID: Int64? = nil,
                 url: String? = nil, occurredAt: Date) {
        self.webhookID = webhookID
        self.type = type
        self.data = data
        self.orderID = orderID
        self.subscriptionID = subscriptionID
        self.url = url
        self.occurredAt = occurredAt
    }

    /// The exact bytes every attempt sends: `{"type", "timestamp", "data"}`.
    var body: String {
        JSONOutput.object([
            .init("type", .string(type)), .init("timestamp", .timestamp(occurredAt)), .init("data", data),
        ]).rendered
    }
}

/// Queues merchant callbacks inside the caller's transaction: the row in `merchant_callbacks`
/// and its delivery job commit (or roll back) with the change that caused them.
package struct MerchantCallbackOutbox: Sendable {
    let queue: JobQueue

    package init(queue: JobQueue) {
        self.queue = queue
    }

    /// Records `callback` with its `webhook-id` and enqueues its delivery, unless a callback for
    /// the same fact (`webhookID`) exists already (then nothing changes: the fact was reported
    /// before).
    /// - Returns: true when the callback is new.
    /// - Throws: `PostgresError`; inside a transaction the caller rolls back.
    @discardableResult
    package func enqueue(_ callback: MerchantCallback, on connection: PostgresConnection) async throws(PostgresError) -> Bool {
        let sentID = Self.webhookID(factKey: callback.webhookID, suffix: RestoreSafeSuffix.make(byteCount: 8))
        let rows = try await connection.query(CallbackSQL.shared.insertCallback, [
            .text(callback.webhookID), .text(callback.type), callback.orderID.map(PostgresValue.int) ?? .null,
            callback.subscriptionID.map(PostgresValue.int) ?? .null, callback.url.map(PostgresValue.text) ?? .null,
            .text(callback.body), .text(sentID),
        ])
        guard let id = try rows.rows.first?.decode("id", as: Int64.self) else { return false }
        try await queue.enqueue(MerchantCallbackArgs(callbackID: id),
                                uniqueKey: JobKind.merchantCallback.uniqueKey(sentID), on: connection)
        return true
    }

    /// The `webhook-id` sent for the fact `factKey`: `<fact key>.<16 hex>`.
    package static func webhookID(factKey: String, suffix: String) -> String { "\(factKey).\(suffix)" }
}

package struct CallbackSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = CallbackSQL()

    /// $1 fact key, $2 type, $3 order, $4 subscription, $5 url, $6 body, $7 webhook-id.
    let insertCallback = """
        INSERT INTO merchant_callbacks (fact_key, type, order_id, subscription_id, url, body, webhook_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (fact_key) DO NOTHING
        RETURNING id
        """

    let selectCallback = """
        SELECT id, webhook_id, type, order_id, subscription_id, url, body, status
        FROM merchant_callbacks WHERE id = $1
        """

    /// One attempt's result. `$2` is the new status (`pending` while retrying). A delivered
    /// callback is final; a failed or gone one is attempted again only when replayed.
    let recordAttempt = """
        UPDATE merchant_callbacks
        SET status = $2, attempts = attempts + 1, last_status_code = $3, last_error = $4,
            delivered_at = CASE WHEN $2 = 'delivered' THEN now() ELSE delivered_at END
        WHERE id = $1 AND status <> 'delivered'
        """
}
