import PayhookCore
import PayhookQueue
import Testing
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// Jobs already in a database when payhook is upgraded must still run: each kind's arguments
/// read the payload text an earlier release stored (as `jsonb::text` gives it back), and write
/// the same keys it wrote.
@Suite("Job arguments' stored shape")
struct JobArgsStoredShapeTests {
    private func job(_ kind: String, _ payload: String) -> Job {
        Job(id: 1, kind: kind, payload: payload, uniqueKey: nil, attempt: 1, maxAttempts: 25, worker: "w",
            runAt: .now, createdAt: .now, leaseExpiresAt: .now)
    }

    @Test("fulfill_order reads and writes {\"order_id\": …}")
    func fulfillOrder() throws {
        #expect(try job("fulfill_order", #"{"order_id": 42}"#).decodeArgs(FulfillOrderArgs.self) == FulfillOrderArgs(orderID: 42))
        // The text the trigger interpolated before typed arguments.
        #expect(FulfillOrderArgs(orderID: 42).payload.rendered == "{\"order_id\":42}")
        #expect(FulfillOrderArgs(orderID: 42).uniqueKey == "fulfill_order:42")
        #expect(FulfillOrderArgs.kind == "fulfill_order")
        #expect(throws: JobPayloadError.self) { try job("fulfill_order", #"{"order": 42}"#).decodeArgs(FulfillOrderArgs.self) }
    }

    @Test("merchant_callback reads and writes {\"callback_id\": …}")
    func merchantCallback() throws {
        #expect(try job("merchant_callback", #"{"callback_id": 7}"#).decodeArgs(MerchantCallbackArgs.self)
            == MerchantCallbackArgs(callbackID: 7))
        #expect(MerchantCallbackArgs(callbackID: 7).payload.rendered == "{\"callback_id\":7}")
        #expect(MerchantCallbackArgs.kind == "merchant_callback")
    }

    @Test("charge_recurring reads and writes idempotency_key, provider and subscription_id")
    func chargeRecurring() throws {
        let stored = #"{"provider": "adyen", "idempotency_key": "payhook:ns:s3:c1:a1:ab12", "subscription_id": 3}"#
        #expect(try job("charge_recurring", stored).decodeArgs(ChargeRecurringArgs.self)
            == ChargeRecurringArgs(idempotencyKey: "payhook:ns:s3:c1:a1:ab12", provider: "adyen", subscriptionID: 3))
        // A payload with only the key (provider and subscription unknown) still runs.
        #expect(try job("charge_recurring", #"{"idempotency_key": "k"}"#).decodeArgs(ChargeRecurringArgs.self)
            == ChargeRecurringArgs(idempotencyKey: "k", provider: nil, subscriptionID: nil))
        #expect(ChargeRecurringArgs(idempotencyKey: "k", provider: "pxp", subscriptionID: 9).payload.rendered
            == #"{"idempotency_key":"k","provider":"pxp","subscription_id":9}"#)
        #expect(ChargeRecurringArgs.kind == "charge_recurring")
    }
}
