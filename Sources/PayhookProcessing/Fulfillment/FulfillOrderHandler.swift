import Foundation
package import PayhookCore
import PayhookLedger
package import PayhookPostgres
package import PayhookQueue
import PayhookCallbacks

/// Runs `fulfill_order`: re-checks the order against what the merchant registered and, when
/// everything matches, queues the signed `order.paid` callback; the order becomes `fulfilled`
/// once the merchant acknowledges it (`MerchantCallbackDelivery`).
///
/// The check runs with the order row locked, so it sees a consistent set of payments. A
/// missing fact (a capture whose authorisation, with the amount, has not arrived) waits: the
/// order records what it waits for (`waiting_for`, `waiting_since`, shown in the console), the
/// job is retried and woken when the order's payments change, and only after
/// ``FulfillmentSettings/reviewAfter`` (or the job's last attempt) goes to review. A mismatch
/// never fulfills: the order becomes `needs_review` with the reason, the job is discarded into
/// a dead letter and `payhook_fulfillments_total{outcome="needs_review"}` counts it.
///
/// Review is not final: a replay of that dead letter, or a new fact on the order (the
/// processor revives the job, `FulfillmentTrigger.wakeWaitingFulfillment`), runs the check again; the
/// order fulfills if the facts now match, and goes back to review with the current reason if
/// not. Running again (a replay, a crash before the outcome was recorded) changes nothing twice:
/// the callback's webhook-id is derived from the order.
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

    static func paidWebhookID(orderID: Int64) -> String { "order.paid.\(orderID)" }

    /// The processor's advisory-lock keys of everything that links a payment to `order`: its
    /// provider order id, its merchant reference and each payment linked already.
    static func lockKeys(_ order: OrderRecord) -> [AdvisoryLockKey] {
        var keys = order.payments.map { AdvisoryLockKey.payment(provider: order.provider, id: $0.providerPaymentID) }
        if let id = order.providerOrderID { keys.append(.order(provider: order.provider, id: id)) }
        for linked in order.providerOrders {
            if let id = linked.providerOrderID { keys.append(.order(provider: order.provider, id: id)) }
        }
        if let reference = order.merchantReference {
            keys.append(.reference(provider: order.provider, merchantReference: reference))
        }
        return keys
    }

    package func run(_ job: Job) async throws -> JobOutcome {
        let orderID: Int64
        do {
            orderID = try job.decodeArgs(FulfillOrderArgs.self).orderID
        } catch {
            return .discard(.payloadInvalid, message: "\(Self.kind) needs an integer order_id")
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
                return .discard(.notFound, message: "no order \(orderID)")
            }
            try await AdvisoryLockKey.lock(Self.lockKeys(unlocked), on: connection)
            guard let order = try await OrderRecord.load(id: orderID, forUpdate: true, on: connection) else {
                return .discard(.notFound, message: "no order \(orderID)")
            }
            // `needs_review` runs the check again: this job was replayed or revived by a new fact.
            if order.fulfillmentStatus == "fulfilled" || order.fulfillmentStatus == "failed" { return .succeeded }
            switch FulfillmentCheck.evaluate(order, settings: settings) {
            case .fulfill:
                try await MerchantCallbackOutbox(queue: queue).enqueue(MerchantCallback(
                    webhookID: Self.paidWebhookID(orderID: order.id), type: "order.paid", data: order.callbackData,
                    orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: Date()), on: connection)
                // `pending` until the merchant acknowledges; a row still at `none` (registered
                // and paid in one go by an operator replay) moves too.
                try await connection.query(LedgerSQL.shared.markOrderFulfillmentPending, [.int(order.id)])
                await beforeCommit?(order.id)
                return .succeeded
            case .wait(let missing):
                let waited = order.waitingSince.map { Date().timeIntervalSince($0) } ?? 0
                if waited < settings.reviewAfter.seconds, !job.isLastAttempt {
                    // Nothing is decided: the fact may still arrive (the processor wakes this job
                    // when the order's payments change).
                    try await connection.query(LedgerSQL.shared.markOrderWaiting, [.int(order.id), .text(missing)])
                    return .retry(error: "waiting: \(missing)")
                }
                let reason = "\(missing), still after waiting \(Int(waited)) s (\(job.attempt) checks)"
                try await connection.query(LedgerSQL.shared.markOrderNeedsReview, [.int(order.id), .text(reason)])
                return .discard(.fulfillmentMismatch, message: reason)
            case .mismatch(let reason):
                try await connection.query(LedgerSQL.shared.markOrderNeedsReview, [.int(order.id), .text(reason)])
                return .discard(.fulfillmentMismatch, message: reason)
            }
        }
        switch outcome {
        case .succeeded:
            metrics.increment("payhook_fulfillments_total", [("outcome", "verified")])
        case .discard(.fulfillmentMismatch, _):
            metrics.increment("payhook_fulfillments_total", [("outcome", "needs_review")])
            logger.warning("order needs review; not fulfilled", ["order_id": .int(orderID), "reason": .string(outcome.recordedError ?? "")])
        default:
            break
        }
        return outcome
    }
}
