import Foundation
package import PayhookCore
package import PayhookPostgres
package import PayhookQueue

/// Runs `fulfill_order`: re-checks the order against what the merchant registered and, when
/// everything matches, queues the signed `order.paid` callback; the order becomes `fulfilled`
/// once the merchant acknowledges it (`MerchantCallbackDelivery`).
///
/// The check runs with the order row locked, so it sees a consistent set of payments. A
/// missing fact (a capture whose authorisation, with the amount, has not arrived) waits: the
/// job is retried and woken when the order's payments change, and only after `checks` goes to
/// review. A mismatch never fulfills: the order becomes `needs_review` with the reason, the job is
/// discarded into a dead letter and `payhook_fulfillments_total{outcome="needs_review"}` counts
/// it. Running again (a replay, a crash before the outcome was recorded) repeats the decision
/// and changes nothing twice: the callback's webhook-id is derived from the order.
package struct FulfillOrderHandler: JobHandler {
    package init(pool: PostgresPool, queue: JobQueue, settings: FulfillmentSettings, metrics: MetricsRegistry, logger: Logger, beforeCommit: (@Sendable (Int64) async -> Void)? = nil) {
        self.pool = pool
        self.queue = queue
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.beforeCommit = beforeCommit
    }

    package static let kind = JobKind.fulfillOrder.rawValue

    let pool: PostgresPool
    let queue: JobQueue
    let settings: FulfillmentSettings
    let metrics: MetricsRegistry
    let logger: Logger
    /// Runs after `order.paid` is queued and before the transaction commits: tests use it to
    /// hold the transaction open while a processor batch races it.
    var beforeCommit: (@Sendable (Int64) async -> Void)? = nil

    private struct Payload: Decodable {
        let order_id: Int64
    }

    static func paidWebhookID(orderID: Int64) -> String { "order.paid.\(orderID)" }

    /// Checks of an order that lacks a fact before it goes to review: the job's attempts, at
    /// most ten (about 17 minutes with the standard backoff).
    static func checks(_ job: Job) -> Int { min(job.maxAttempts, 10) }

    /// The processor's advisory-lock keys of everything that links a payment to `order`: its
    /// provider order id, its merchant reference and each payment linked already.
    static func lockKeys(_ order: OrderRecord) -> [AdvisoryLockKey] {
        var keys = order.payments.map { AdvisoryLockKey.payment(provider: order.provider, id: $0.providerPaymentID) }
        if let id = order.providerOrderID { keys.append(.order(provider: order.provider, id: id)) }
        if let reference = order.merchantReference {
            keys.append(.reference(provider: order.provider, merchantReference: reference))
        }
        return keys
    }

    package func run(_ job: Job) async throws -> JobOutcome {
        let orderID: Int64
        do {
            orderID = try job.decodePayload(Payload.self).order_id
        } catch {
            return .discard(reason: "payload_invalid: \(Self.kind) needs an integer order_id")
        }
        let settings = self.settings
        let queue = self.queue
        let beforeCommit = self.beforeCommit
        let outcome: JobOutcome = try await pool.transaction { connection in
            // Serialize with the processor before taking the row: the advisory locks it takes for
            // this order's payments, in its sorted order. A refund processed while this
            // transaction is open must wait for order.paid to commit, or it reports nothing;
            // without these locks only an incidental row lock (the foreign-key check of
            // payment_events.order_id) would hold it back.
            guard let unlocked = try await OrderRecord.load(id: orderID, on: connection) else {
                return .discard(reason: "not_found: no order \(orderID)")
            }
            try await AdvisoryLockKey.lock(Self.lockKeys(unlocked), on: connection)
            guard let order = try await OrderRecord.load(id: orderID, forUpdate: true, on: connection) else {
                return .discard(reason: "not_found: no order \(orderID)")
            }
            switch order.fulfillmentStatus {
            case "fulfilled", "failed":
                return .succeeded
            case "needs_review":
                return .discard(reason: "fulfillment_mismatch: \(order.reviewReason ?? "order needs review")")
            default:
                break
            }
            switch FulfillmentCheck.evaluate(order, settings: settings) {
            case .fulfill:
                try await MerchantCallbackOutbox(queue: queue).enqueue(MerchantCallback(
                    webhookID: Self.paidWebhookID(orderID: order.id), type: "order.paid", data: order.callbackData,
                    orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: Date()), on: connection)
                // `pending` until the merchant acknowledges; a row still at `none` (registered
                // and paid in one go by an operator replay) moves too.
                try await connection.query(FulfillmentSQL.shared.markFulfillmentPending, [.int(order.id)])
                await beforeCommit?(order.id)
                return .succeeded
            case .wait(let missing) where job.attempt < Self.checks(job):
                // Nothing is decided: the fact may still arrive (the processor wakes this job
                // when the order's payments change).
                return .retry(error: "waiting: \(missing)")
            case .wait(let missing):
                let reason = "\(missing), still after \(job.attempt) checks"
                try await connection.query(FulfillmentSQL.shared.markNeedsReview, [.int(order.id), .text(reason)])
                return .discard(reason: "fulfillment_mismatch: \(reason)")
            case .mismatch(let reason):
                try await connection.query(FulfillmentSQL.shared.markNeedsReview, [.int(order.id), .text(reason)])
                return .discard(reason: "fulfillment_mismatch: \(reason)")
            }
        }
        switch outcome {
        case .succeeded:
            metrics.increment("payhook_fulfillments_total", [("outcome", "verified")])
        case .discard(let reason) where reason.hasPrefix("fulfillment_mismatch"):
            metrics.increment("payhook_fulfillments_total", [("outcome", "needs_review")])
            logger.warning("order needs review; not fulfilled", ["order_id": .int(orderID), "reason": .string(reason)])
        default:
            break
        }
        return outcome
    }
}
