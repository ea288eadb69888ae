package import Foundation
package import PayhookPostgres
import PayhookAdmin
import PayhookCore

/// An order as fulfillment and the admin API see it: the merchant's registered expectation,
/// what the provider reported, and the payments linked to it.
package struct OrderRecord: Sendable {
    package struct Payment: Sendable {
        var id: Int64
        package var providerPaymentID: String
        package var merchantReference: String?
        package var amountMinor: Int64?
        package var currency: String?
        package var refundedMinor: Int64
        package var status: String
        var statusDetail: String?
        package var method: String?
        package var funding: String?
        package var chargebacks: Int
        package var chargebackReversals: Int
        package var updatedAt: Date
        /// The payhook account whose route delivered it (`""`: the default route).
        var account: String = ""
        /// The sum of the captures reported one by one (Adyen CAPTURE), in ISO minor units:
        /// "captured 4,000 of 10,000". `nil` when the provider reports no such captures
        /// (Mercado Pago, PXP) or none has arrived yet. Fulfillment counts it in place of the
        /// amount for a captured payment (`FulfillmentCheck.countedMinor`).
        package var capturedMinor: Int64? = nil
        /// The sum of this payment's refunds that later failed (REFUND_FAILED, REFUNDED_REVERSED).
        package var refundFailedMinor: Int64 = 0
    }

    /// A provider order linked to this merchant order by its reference (`orders.merchant_order_id`):
    /// another Mercado Pago checkout attempt for the same `external_reference`.
    package struct ProviderOrder: Sendable {
        package var id: Int64
        package var providerOrderID: String?
        /// Its provider-reported status (`created` until the provider order says otherwise).
        package var status: String
    }

    package struct Callback: Sendable {
        package var webhookID: String
        package var type: String
        package var status: String
        package var attempts: Int
        package var lastStatusCode: Int?
        package var createdAt: Date
        package var deliveredAt: Date?

        /// A `merchant_callbacks` row with these columns: webhook_id, type, status, attempts,
        /// last_status_code, created_at, delivered_at (orders' and subscriptions' alike).
        package init(row: PostgresRow) throws(PostgresError) {
            webhookID = try row.decode("webhook_id")
            type = try row.decode("type")
            status = try row.decode("status")
            attempts = try row.decode("attempts")
            lastStatusCode = try row.decode("last_status_code")
            createdAt = try row.decode("created_at")
            deliveredAt = try row.decode("delivered_at")
        }
    }

    package var id: Int64
    package var provider: String
    package var account: String
    package var providerOrderID: String?
    package var merchantReference: String?
    package var expectedAmountMinor: Int64?
    package var expectedCurrency: String?
    /// The provider-reported order status (`created` until a provider order says otherwise).
    package var status: String
    package var fulfillmentStatus: String
    package var reviewReason: String?
    package var callbackURL: String?
    package var registeredAt: Date?
    package var fulfilledAt: Date?
    /// The fact fulfillment is waiting for, and since when (`nil` unless a check is waiting).
    package var waitingFor: String? = nil
    package var waitingSince: Date? = nil
    package var createdAt: Date
    package var updatedAt: Date
    /// The payments of this order and of every provider order linked to it.
    package var payments: [Payment] = []
    package var callbacks: [Callback] = []
    /// Provider orders linked to this registered order by reference; empty for most orders.
    package var providerOrders: [ProviderOrder] = []
}

extension OrderRecord {
    init(row: PostgresRow) throws(PostgresError) {
        id = try row.decode("id")
        provider = try row.decode("provider")
        account = try row.decode("account")
        providerOrderID = try row.decode("provider_order_id")
        merchantReference = try row.decode("merchant_reference")
        expectedAmountMinor = try row.decode("expected_amount_minor")
        expectedCurrency = try row.decode("expected_currency")
        status = try row.decode("status")
        fulfillmentStatus = try row.decode("fulfillment_status")
        reviewReason = try row.decode("review_reason")
        callbackURL = try row.decode("callback_url")
        registeredAt = try row.decode("registered_at")
        fulfilledAt = try row.decode("fulfilled_at")
        waitingFor = try row.decode("waiting_for")
        waitingSince = try row.decode("waiting_since")
        createdAt = try row.decode("created_at")
        updatedAt = try row.decode("updated_at")
        payments = []
        callbacks = []
        providerOrders = []
    }

    /// Reads an order with its payments (and callbacks when `withCallbacks`), locking the
    /// order row when `forUpdate` (inside the caller's transaction).
    package static func load(id: Int64, forUpdate: Bool = false, withCallbacks: Bool = false,
                     on connection: PostgresConnection) async throws(PostgresError) -> OrderRecord? {
        let sql = forUpdate ? FulfillmentSQL.shared.selectOrderForUpdate : FulfillmentSQL.shared.selectOrder
        guard let row = try await connection.query(sql, [.int(id)]).rows.first else { return nil }
        var order = try OrderRecord(row: row)
        order.payments = try await connection.query(FulfillmentSQL.shared.selectPayments, [.int(id)]).map { row throws(PostgresError) in
            Payment(id: try row.decode("id"), providerPaymentID: try row.decode("provider_payment_id"),
                    merchantReference: try row.decode("merchant_reference"), amountMinor: try row.decode("amount_minor"),
                    currency: try row.decode("currency"), refundedMinor: try row.decode("refunded_minor"),
                    status: try row.decode("status"), statusDetail: try row.decode("status_detail"),
                    method: try row.decode("method"), funding: try row.decode("funding"),
                    chargebacks: try row.decode("chargebacks"), chargebackReversals: try row.decode("chargeback_reversals"),
                    updatedAt: try row.decode("updated_at"), account: try row.decode("account"),
                    capturedMinor: try row.decode("captured_minor"), refundFailedMinor: try row.decode("refund_failed_minor"))
        }
        order.providerOrders = try await connection.query(FulfillmentSQL.shared.selectProviderOrders, [.int(id)]).map { row throws(PostgresError) in
            ProviderOrder(id: try row.decode("id"), providerOrderID: try row.decode("provider_order_id"), status: try row.decode("status"))
        }
        if withCallbacks {
            order.callbacks = try await connection.query(FulfillmentSQL.shared.selectCallbacks, [.int(id)]).map { row throws(PostgresError) in try Callback(row: row) }
        }
        return order
    }

    static func money(_ minor: Int64?, _ currency: String?) -> JSONOutput {
        guard let minor, let currency else { return .null }
        return .object([.init("value", .int(minor)), .init("currency", .string(currency))])
    }

    func paymentJSON(_ payment: Payment) -> JSONOutput {
        .object([
            .init("provider_payment_id", .string(payment.providerPaymentID)),
            .init("status", .string(payment.status)),
            .init("status_detail", .optional(payment.statusDetail)),
            .init("amount", Self.money(payment.amountMinor, payment.currency)),
            .init("refunded", Self.money(payment.refundedMinor, payment.currency)),
            .init("captured", Self.money(payment.capturedMinor, payment.currency)),
            .init("merchant_reference", .optional(payment.merchantReference)),
            .init("method", .optional(payment.method)),
            .init("funding", .optional(payment.funding)),
            .init("updated_at", .timestamp(payment.updatedAt)),
        ])
    }

    /// The order as merchants receive it in callbacks: no operator-only fields.
    var callbackData: JSONOutput {
        .object([
            .init("order_id", .int(id)),
            .init("provider", .string(provider)),
            .init("provider_order_id", .optional(providerOrderID)),
            .init("merchant_reference", .optional(merchantReference)),
            .init("amount", Self.money(expectedAmountMinor, expectedCurrency)),
            .init("payments", .array(payments.map(paymentJSON))),
        ])
    }

    /// The admin API's view: state, payments and fulfillment with its callbacks.
    var json: JSONOutput {
        .object([
            .init("id", .int(id)),
            .init("provider", .string(provider)),
            .init("account", .string(account)),
            .init("merchant_reference", .optional(merchantReference)),
            .init("provider_order_id", .optional(providerOrderID)),
            .init("amount", Self.money(expectedAmountMinor, expectedCurrency)),
            .init("callback_url", .optional(callbackURL)),
            .init("status", .string(status)),
            .init("provider_orders", .array(providerOrders.map { linked in
                .object([.init("provider_order_id", .optional(linked.providerOrderID)), .init("status", .string(linked.status))])
            })),
            .init("payments", .array(payments.map(paymentJSON))),
            .init("fulfillment", .object([
                .init("status", .string(fulfillmentStatus)),
                .init("review_reason", .optional(reviewReason)),
                .init("waiting_for", .optional(waitingFor)),
                .init("waiting_since", .timestamp(waitingSince)),
                .init("fulfilled_at", .timestamp(fulfilledAt)),
                .init("callbacks", .array(callbacks.map { callback in
                    .object([
                        .init("webhook_id", .string(callback.webhookID)), .init("type", .string(callback.type)),
                        .init("status", .string(callback.status)), .init("attempts", .int(Int64(callback.attempts))),
                        .init("last_status_code", .optional(callback.lastStatusCode.map(Int64.init))),
                        .init("created_at", .timestamp(callback.createdAt)),
                        .init("delivered_at", .timestamp(callback.deliveredAt)),
                    ])
                })),
            ])),
            .init("registered_at", .timestamp(registeredAt)),
            .init("created_at", .timestamp(createdAt)),
            .init("updated_at", .timestamp(updatedAt)),
        ])
    }
}
