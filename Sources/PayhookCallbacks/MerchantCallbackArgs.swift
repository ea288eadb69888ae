package import PayhookCore
package import PayhookQueue

/// The arguments of a `merchant_callback` job: the `merchant_callbacks` row to deliver. Stored
/// as `{"callback_id": 7}`.
package struct MerchantCallbackArgs: JobArgs, Equatable {
    package static let kind = JobKind.merchantCallback.rawValue

    package let callbackID: Int64

    package init(callbackID: Int64) {
        self.callbackID = callbackID
    }

    package var payload: JSONOutput { .object([.init("callback_id", .int(callbackID))]) }

    package init(payload: JobPayload) throws(JobPayloadError) {
        callbackID = try payload.int64("callback_id")
    }
}
