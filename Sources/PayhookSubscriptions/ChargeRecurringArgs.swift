package import PayhookCore
package import PayhookQueue

/// The arguments of a `charge_recurring` job: the charge attempt's idempotency key. `provider`
/// also lets a dead letter name the provider (the queue reads `payload->>'provider'`).
/// Stored as `{"idempotency_key": …, "provider": …, "subscription_id": …}`; jobs of older
/// releases may lack `provider` and `subscription_id`.
package struct ChargeRecurringArgs: JobArgs, Equatable {
    package static let kind = JobKind.chargeRecurring.rawValue

    let idempotencyKey: String
    let provider: String?
    let subscriptionID: Int64?

    package init(idempotencyKey: String, provider: String?, subscriptionID: Int64?) {
        self.idempotencyKey = idempotencyKey
        self.provider = provider
        self.subscriptionID = subscriptionID
    }

    package var payload: JSONOutput {
        .object([
            .init("idempotency_key", .string(idempotencyKey)), .init("provider", .optional(provider)),
            .init("subscription_id", .optional(subscriptionID)),
        ])
    }

    package init(payload: JobPayload) throws(JobPayloadError) {
        idempotencyKey = try payload.string("idempotency_key")
        provider = try payload.optionalString("provider")
        subscriptionID = try payload.optionalInt64("subscription_id")
    }
}
