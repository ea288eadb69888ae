import Foundation
import PayhookCore
import PayhookPostgres
package import PayhookQueue
import PayhookAdmin

/// Queues what a change to orders and payments owes the merchant, inside the transaction that
/// made the change: `fulfill_order` when a registered order becomes paid (unique key per
/// order, so duplicates and replays enqueue it once), and `order.refunded` /
/// `order.charged_back` / `order.payment_reversed` callbacks for orders already reported paid.
package struct FulfillmentTrigger: Sendable {
    package init(queue: JobQueue, settings: FulfillmentSettings) {
        self.queue = queue
        self.settings = settings
    }

    let queue: JobQueue
    let settings: FulfillmentSettings

    /// After a processor batch: links reference-only payments to registered orders, then queues
    /// follow-ups for every order the batch touched. Nothing to do (the common case for
    /// providers without merchant orders) costs at most one indexed statement.
    func afterProcessing(_ touched: CanonicalEventApplier.TouchedRows, on connection: PostgresConnection) async throws {
        var orderIDs = touched.orderIDs
        if !touched.unlinkedPaymentIDs.isEmpty {
            let linked = try await connection.query(FulfillmentSQL.shared.linkPaymentsByReference,
                                                    [.integerArray(touched.unlinkedPaymentIDs)])
            for row in linked { orderIDs.insert(try row.decode("order_id")) }
        }
        guard !orderIDs.isEmpty else { return }
        try await queueFollowUps(orderIDs: orderIDs.sorted(), on: connection)
    }

    /// After an order is registered (its payments may have arrived first).
    func afterRegistration(orderID: Int64, on connection: PostgresConnection) async throws {
        try await queueFollowUps(orderIDs: [orderID], on: connection)
    }

    private func queueFollowUps(orderIDs: [Int64], on connection: PostgresConnection) async throws {
        let rows = try await connection.query(FulfillmentSQL.shared.followUps, [
            .integerArray(orderIDs), .text("{" + settings.paidStatuses.joined(separator: ",") + "}"),
        ])
        var jobs: [JobRequest] = []
        var reversals: [(order: Int64, payment: Int64, shortCapture: Bool)] = []
        for row in rows {
            let orderID: Int64 = try row.decode("order_id")
            if try row.decode("follow_up", as: String.self) == "paid" {
                jobs.append(JobRequest(kind: JobKind.fulfillOrder.rawValue, payload: "{\"order_id\":\(orderID)}",
                                       uniqueKey: JobKind.fulfillOrder.uniqueKey("\(orderID)")))
            } else {
                reversals.append((orderID, try row.decode("payment_id"), try row.decode("short_capture")))
            }
        }
        try await queue.enqueue(jobs, on: connection)
        try await connection.query(FulfillmentSQL.shared.wakeWaitingFulfillment, [.integerArray(orderIDs)])
        for orderID in Set(reversals.map(\.order)) {
            guard let order = try await OrderRecord.load(id: orderID, on: connection) else { continue }
            for payment in order.payments {
                guard let reversal = reversals.first(where: { $0.payment == payment.id }) else { continue }
                for callback in Self.reversalCallbacks(order: order, payment: payment, paidStatuses: settings.paidStatuses,
                                                       capturedBelowAuthorised: reversal.shortCapture) {
                    try await MerchantCallbackOutbox(queue: queue).enqueue(callback, on: connection)
                }
            }
        }
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
