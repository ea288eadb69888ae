package import PayhookCore
package import PayhookQueue

/// The arguments of a `fulfill_order` job: the order to check. Stored as `{"order_id": 42}`.
package struct FulfillOrderArgs: JobArgs, Equatable {
    package static let kind = JobKind.fulfillOrder.rawValue

    package let orderID: Int64

    package init(orderID: Int64) {
        self.orderID = orderID
    }

    package var payload: JSONOutput { .object([.init("order_id", .int(orderID))]) }

    package init(payload: JobPayload) throws(JobPayloadError) {
        orderID = try payload.int64("order_id")
    }

    /// The `unique_key` of the order's one fulfillment job.
    package var uniqueKey: String { JobKind.fulfillOrder.uniqueKey("\(orderID)") }
}
