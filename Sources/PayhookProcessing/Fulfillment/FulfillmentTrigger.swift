import Foundation
import PayhookCore
import PayhookPostgres
package import PayhookQueue
import PayhookAdmin
import PayhookOperations
import PayhookCallbacks
import PayhookLedger

/// Queues what a change to orders and payments owes the merchant, inside the transaction that
/// made the change: `fulfill_order` when a registered order becomes paid (unique key per
/// order, so duplicates and replays enqueue it once), and `order.refunded` /
/// `order.charged_back` / `order.payment_reversed` / `order.overpaid` callbacks for orders
/// already reported paid.
package struct FulfillmentTrigger: Sendable {
    package init(queue: JobQueue, settings: FulfillmentSettings) {
        self.queue = queue
        self.settings = settings
    }

    let queue: JobQueue
    let settings: FulfillmentSettings

    /// After a processor batch: links provider orders and reference-only payments to registered
    /// orders, then queues follow-ups for every registered order the batch touched. Nothing to do
    /// (the common case for providers without merchant orders) costs at most one indexed statement.
    /// - Returns: how many payments were newly reported as `order.overpaid`.
    @discardableResult
    func afterProcessing(_ touched: TouchedRows, on connection: PostgresConnection) async throws -> Int {
        var orderIDs: Set<Int64> = []
        if !touched.orderIDs.isEmpty {
            // A provider order sharing a registered order's reference (another Mercado Pago
            // checkout attempt) counts for the registered order.
            let followed = try await connection.query(LedgerSQL.shared.linkProviderOrders, [.integerArray(touched.orderIDs.sorted())])
            for row in followed { orderIDs.insert(try row.decode("order_id")) }
        }
        if !touched.unlinkedPaymentIDs.isEmpty {
            let linked = try await connection.query(LedgerSQL.shared.linkPaymentsByReference,
                                                    [.integerArray(touched.unlinkedPaymentIDs)])
            for row in linked { orderIDs.insert(try row.decode("order_id")) }
        }
        guard !orderIDs.isEmpty else { return 0 }
        return try await queueFollowUps(orderIDs: orderIDs.sorted(), on: connection)
    }

    /// After an order is registered (its payments may have arrived first).
    func afterRegistration(orderID: Int64, on connection: PostgresConnection) async throws {
        // The overpaid count feeds a processed batch's report (`AfterBatchReport`); a registration
        // is not a batch. The callbacks it queues are the same either way.
        _ = try await queueFollowUps(orderIDs: [orderID], on: connection)
    }

    private func queueFollowUps(orderIDs: [Int64], on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(LedgerSQL.shared.fulfillmentFollowUps, [
            .integerArray(orderIDs), .text("{" + settings.paidStatuses.joined(separator: ",") + "}"),
        ])
        var jobs: [JobRequest] = []
        var reversals: [(order: Int64, payment: Int64, shortCapture: Bool)] = []
        var overpaid: [(order: Int64, payment: Int64)] = []
        for row in rows {
            let orderID: Int64 = try row.decode("order_id")
            switch try row.decode("follow_up", as: String.self) {
            case "paid":
                let args = FulfillOrderArgs(orderID: orderID)
                jobs.append(JobRequest(args, uniqueKey: args.uniqueKey))
            case "overpaid":
                overpaid.append((orderID, try row.decode("payment_id")))
            default:
                reversals.append((orderID, try row.decode("payment_id"), try row.decode("short_capture")))
            }
        }
        try await queue.enqueue(jobs, on: connection)
        try await wakeWaitingFulfillment(orderIDs: orderIDs, on: connection)
        for orderID in Set(reversals.map(\.order)) {
            guard let order = try await OrderRecord.load(id: orderID, withCallbacks: true, on: connection) else { continue }
            for payment in order.payments {
                guard let reversal = reversals.first(where: { $0.payment == payment.id }) else { continue }
                for callback in Self.reversalCallbacks(order: order, payment: payment, paidStatuses: settings.paidStatuses,
                                                       capturedBelowAuthorised: reversal.shortCapture) {
                    try await MerchantCallbackOutbox(queue: queue).enqueue(callback, on: connection)
                }
            }
        }
        var reported = 0
        for orderID in Set(overpaid.map(\.order)).sorted() {
            guard let order = try await OrderRecord.load(id: orderID, on: connection) else { continue }
            for payment in order.payments where overpaid.contains(where: { $0.order == orderID && $0.payment == payment.id }) {
                let callback = Self.overpaidCallback(order: order, payment: payment)
                guard try await MerchantCallbackOutbox(queue: queue).enqueue(callback, on: connection) else { continue }
                reported += 1
                let amount = payment.amountMinor.map { Self.minorText($0, payment.currency) } ?? "an unreported amount"
                try await connection.query(LedgerSQL.shared.markOrderOverpaid, [
                    .int(order.id),
                    .text("overpaid: payment \(payment.providerPaymentID) paid \(amount) after the order was reported paid; refund it or keep it as credit"),
                ])
            }
        }
        return reported
    }

    /// The `fulfill_order` jobs of `orderIDs` that wait on them run now: a job waiting for a
    /// missing fact is woken, and the discarded job of an order in review is revived (attempts
    /// back to 0) with its open dead letter resolved as replayed by payhook, so the check runs
    /// again with the new fact.
    private func wakeWaitingFulfillment(orderIDs: [Int64], on connection: PostgresConnection) async throws {
        var waiting: [String] = []
        var reviewed: [String] = []
        for row in try await connection.query(FulfillmentSQL.shared.ordersAwaitingFulfillment, [.integerArray(orderIDs)]) {
            let key = FulfillOrderArgs(orderID: try row.decode("id")).uniqueKey
            waiting.append(key)
            if try row.decode("fulfillment_status", as: String.self) == "needs_review" { reviewed.append(key) }
        }
        try await JobQueue.wake(kind: FulfillOrderArgs.kind, uniqueKeys: waiting, on: connection)
        let revived = try await JobQueue.requeue(kind: FulfillOrderArgs.kind, uniqueKeys: reviewed, from: [.discarded], on: connection)
        guard !revived.isEmpty else { return }
        try await DeadLetterStore.resolveJobLetters(jobIDs: revived, as: .replayed, by: "payhook",
                                                    note: "re-checked: a new fact arrived for the order", on: connection)
    }

    private static func minorText(_ minor: Int64, _ currency: String?) -> String {
        "\(minor) \(currency ?? "") minor units"
    }

    /// `order.overpaid`: a payment captured on an order already reported paid (a duplicate
    /// checkout). The shopper paid twice; the merchant decides to refund or keep it. Keyed by
    /// the payment, so it is reported once however often its facts are delivered.
    static func overpaidCallback(order: OrderRecord, payment: OrderRecord.Payment) -> MerchantCallback {
        MerchantCallback(
            webhookID: "order.overpaid.\(order.id).\(payment.id)", type: "order.overpaid",
            data: .object([
                .init("order_id", .int(order.id)),
                .init("merchant_reference", .optional(order.merchantReference)),
                .init("provider", .string(order.provider)),
                .init("amount", OrderRecord.money(order.expectedAmountMinor, order.expectedCurrency)),
                .init("payment", order.paymentJSON(payment)),
            ]),
            orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: payment.updatedAt)
    }

    /// The callbacks a refunded, disputed or otherwise reversed payment owes. The webhook-id
    /// names the fact (the refunded total, the dispute count, the status paid state was lost
    /// to), so the same fact seen again maps to the same id.
    /// - Parameter paidStatuses: what counts as paid; a payment (reported paid in `order.paid`,
    ///   as the caller made sure) in another status that no refund or dispute explains lost its
    ///   paid state: `order.payment_reversed` with `data.reason` its canonical status.
    /// - Parameter capturedBelowAuthorised: `order.paid` counted the payment's authorisation in
    ///   full (`PAYHOOK_FULFILL_ON_AUTHORIZED`) and its captures took less: `order.payment_reversed`
    ///   with `data.reason` `partial_capture` and `data.shortfall`, keyed by the captured sum so
    ///   each further partial capture is reported once.
    static func reversalCallbacks(order: OrderRecord, payment: OrderRecord.Payment, paidStatuses: [String],
                                  capturedBelowAuthorised: Bool = false) -> [MerchantCallback] {
        var callbacks: [MerchantCallback] = []
        // What every reversal callback says, with `extra` members before the payment.
        func data(_ extra: [JSONOutput.Member] = []) -> JSONOutput {
            .object([
                .init("order_id", .int(order.id)),
                .init("merchant_reference", .optional(order.merchantReference)),
                .init("provider", .string(order.provider)),
            ] + extra + [.init("payment", order.paymentJSON(payment))])
        }
        if payment.refundedMinor > 0 || payment.status == "refunded" || payment.status == "partially_refunded" {
            let fact = payment.refundedMinor > 0 ? String(payment.refundedMinor) : payment.status
            callbacks.append(MerchantCallback(
                webhookID: "order.refunded.\(order.id).\(payment.id).\(fact)", type: "order.refunded", data: data(),
                orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: payment.updatedAt))
        }
        let explained: Set<String> = ["refunded", "partially_refunded", "charged_back"]
        if !paidStatuses.contains(payment.status), !explained.contains(payment.status), payment.refundedMinor == 0 {
            callbacks.append(MerchantCallback(
                webhookID: "order.payment_reversed.\(order.id).\(payment.id).\(payment.status)", type: "order.payment_reversed",
                data: data([.init("reason", .string(payment.status))]),
                orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: payment.updatedAt))
        }
        if capturedBelowAuthorised, let amount = payment.amountMinor, let captured = payment.capturedMinor, captured < amount {
            callbacks.append(MerchantCallback(
                webhookID: "order.payment_reversed.\(order.id).\(payment.id).captured-\(captured)", type: "order.payment_reversed",
                data: data([.init("reason", .string("partial_capture")),
                            .init("shortfall", OrderRecord.money(amount - captured, payment.currency))]),
                orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: payment.updatedAt))
        }
        // A reversal of a reversal is reported only when the merchant heard of the first one.
        func reported(_ type: String) -> Bool {
            order.callbacks.contains { $0.webhookID.hasPrefix("\(type).\(order.id).\(payment.id).") }
        }
        if payment.refundFailedMinor > 0, reported("order.refunded") {
            callbacks.append(MerchantCallback(
                webhookID: "order.refund_failed.\(order.id).\(payment.id).\(payment.refundFailedMinor)", type: "order.refund_failed",
                data: data([.init("refund_failed", OrderRecord.money(payment.refundFailedMinor, payment.currency))]),
                orderID: order.id, subscriptionID: nil, url: order.callbackURL, occurredAt: payment.updatedAt))
        }
        if payment.chargebackReversals > 0, reported("order.charged_back") {
            callbacks.append(MerchantCallback(
                webhookID: "order.chargeback_reversed.\(order.id).\(payment.id).\(payment.chargebackReversals)",
                type: "order.chargeback_reversed", data: data(), orderID: order.id, subscriptionID: nil, url: order.callbackURL,
                occurredAt: payment.updatedAt))
        }
        let openDisputes = payment.chargebacks - payment.chargebackReversals
        if payment.status == "charged_back" || openDisputes > 0 {
            callbacks.append(MerchantCallback(
                webhookID: "order.charged_back.\(order.id).\(payment.id).\(max(payment.chargebacks, 1))",
                type: "order.charged_back", data: data(), orderID: order.id, subscriptionID: nil, url: order.callbackURL,
                occurredAt: payment.updatedAt))
        }
        return callbacks
    }
}
