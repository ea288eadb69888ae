package import Foundation
package import PayhookPostgres
package import PayhookCore
import PayhookCallbacks

/// One row of `subscriptions` with its vault token, as operators and the admin API see it.
package struct Subscription: Sendable, Equatable {
    /// The closed set stored in `subscriptions.status`.
    package enum Status: String, Sendable, CaseIterable {
        case active
        /// Its charge failed for good (hard decline, or dunning exhausted); not charged again
        /// until resumed.
        case pastDue = "past_due"
        /// Paused by an operator or because its token was disabled or expired.
        case paused
        case canceled
        /// Its last cycle (max_cycles or end_at) was scheduled.
        case completed
    }

    package let id: Int64
    package let reference: String
    package let status: Status
    package let statusReason: String?
    package let vaultToken: VaultToken
    package let amountMinor: Int64
    package let currency: String
    package let interval: SubscriptionInterval?
    package let intervalJSON: String
    package let startAt: Date
    /// The next cycle the scheduler will create a charge for.
    package let cycle: Int
    /// When `cycle` is due.
    package let nextChargeAt: Date
    package let maxCycles: Int?
    package let endAt: Date?
    let createdAt: Date
    let updatedAt: Date
    package let canceledAt: Date?

    /// The `vault_tokens` row the subscription charges, as `SubscriptionSQL.subscriptionColumns` joins it.
    package struct VaultToken: Sendable, Equatable {
        package let id: Int64
        package let provider: String
        let token: String
        package let status: String

        init(row: PostgresRow) throws(PostgresError) {
            id = try row.decode("vault_token_id")
            provider = try row.decode("token_provider")
            token = try row.decode("token")
            status = try row.decode("token_status")
        }

        var json: JSONOutput {
            .object([
                .init("id", .int(id)), .init("provider", .string(provider)), .init("token", .string(token)),
                .init("status", .string(status)),
            ])
        }
    }

    init(row: PostgresRow) throws(PostgresError) {
        id = try row.decode("id")
        reference = try row.decode("reference")
        let statusText: String = try row.decode("status")
        guard let status = Status(rawValue: statusText) else {
            throw PostgresError(kind: .decoding, message: "unknown subscription status")
        }
        self.status = status
        statusReason = try row.decode("status_reason")
        vaultToken = try VaultToken(row: row)
        amountMinor = try row.decode("amount_minor")
        currency = try row.decode("currency")
        intervalJSON = try row.decode("interval")
        interval = SubscriptionInterval.parse(json: intervalJSON)
        startAt = try row.decode("start_at")
        cycle = try row.decode("cycle")
        nextChargeAt = try row.decode("next_charge_at")
        maxCycles = try row.decode("max_cycles")
        endAt = try row.decode("end_at")
        createdAt = try row.decode("created_at")
        updatedAt = try row.decode("updated_at")
        canceledAt = try row.decode("canceled_at")
    }

    package var json: JSONOutput {
        .object([
            .init("id", .int(id)), .init("reference", .string(reference)), .init("status", .string(status.rawValue)),
            .init("status_reason", .optional(statusReason)),
            .init("vault_token", vaultToken.json),
            .init("amount", .object([.init("value", .int(amountMinor)), .init("currency", .string(currency))])),
            .init("interval", interval?.json ?? .raw(intervalJSON)),
            .init("start_at", .timestamp(startAt)), .init("next_cycle", .int(Int64(cycle))),
            .init("next_charge_at", .timestamp(nextChargeAt)), .init("max_cycles", .optional(maxCycles.map(Int64.init))),
            .init("end_at", .timestamp(endAt)), .init("created_at", .timestamp(createdAt)),
            .init("updated_at", .timestamp(updatedAt)), .init("canceled_at", .timestamp(canceledAt)),
        ])
    }
}

/// One row of `charges`: one attempt to charge one cycle.
package struct Charge: Sendable, Equatable {
    /// The closed set stored in `charges.status`; `status` keeps the stored text.
    package enum Status: String, Sendable, CaseIterable {
        /// Recorded, not settled: not yet sent, or the provider answered "in progress".
        case pending
        case succeeded
        /// Declined; a later attempt of the cycle may succeed (dunning).
        case declinedSoft = "declined_soft"
        /// Declined for good: the subscription goes past due.
        case declinedHard = "declined_hard"
        /// Sent, outcome not known (timeout, 5xx, crash): reconciled or re-sent with the same key.
        case unknown
        /// Never sent: the subscription was canceled or went past due after the cycle was scheduled.
        case skipped

        /// Settled: the charge is never sent again.
        var isSettled: Bool { self != .pending && self != .unknown }
    }

    package let id: Int64
    package let subscriptionID: Int64
    package let cycle: Int
    package let attempt: Int
    package let idempotencyKey: String
    package let amountMinor: Int64
    package let currency: String
    package let status: String
    let reason: String
    package let declineCode: String?
    let provider: String?
    package let providerPaymentID: String?
    let providerStatus: String?
    let paymentID: Int64?
    let orderID: Int64?
    package let scheduledAt: Date
    package let attemptedAt: Date?
    package let settledAt: Date?
    package let calls: Int
    package let lastError: String?
    package let createdAt: Date
    /// What the provider's webhook echoes for this charge (`SubscriptionSQL.chargeReference`).
    let merchantReference: String?

    package init(row: PostgresRow) throws(PostgresError) {
        id = try row.decode("id")
        subscriptionID = try row.decode("subscription_id")
        cycle = try row.decode("cycle")
        attempt = try row.decode("attempt")
        idempotencyKey = try row.decode("idempotency_key")
        amountMinor = try row.decode("amount_minor")
        currency = try row.decode("currency")
        status = try row.decode("status")
        reason = try row.decode("reason")
        declineCode = try row.decode("decline_code")
        provider = try row.decode("provider")
        providerPaymentID = try row.decode("provider_payment_id")
        providerStatus = try row.decode("provider_status")
        paymentID = try row.decode("payment_id")
        orderID = try row.decode("order_id")
        scheduledAt = try row.decode("scheduled_at")
        attemptedAt = try row.decode("attempted_at")
        settledAt = try row.decode("settled_at")
        calls = try row.decode("calls")
        lastError = try row.decode("last_error")
        createdAt = try row.decode("created_at")
        merchantReference = try row.decode("merchant_reference")
    }

    var json: JSONOutput {
        .object([
            .init("id", .int(id)), .init("cycle", .int(Int64(cycle))), .init("attempt", .int(Int64(attempt))),
            .init("idempotency_key", .string(idempotencyKey)), .init("status", .string(status)),
            .init("reason", .string(reason)),
            .init("amount", .object([.init("value", .int(amountMinor)), .init("currency", .string(currency))])),
            .init("decline_code", .optional(declineCode)), .init("provider", .optional(provider)),
            .init("provider_payment_id", .optional(providerPaymentID)), .init("provider_status", .optional(providerStatus)),
            .init("payment_id", .optional(paymentID)), .init("order_id", .optional(orderID)),
            .init("scheduled_at", .timestamp(scheduledAt)),
            .init("attempted_at", .timestamp(attemptedAt)), .init("settled_at", .timestamp(settledAt)),
            .init("calls", .int(Int64(calls))), .init("last_error", .optional(lastError)),
            .init("created_at", .timestamp(createdAt)),
        ])
    }

    /// The idempotency key of one attempt, `<namespace>-sub-<id>-c<cycle>-a<attempt>-<nonce>`.
    /// The key is made once, when the attempt's `charges` row is written, and every retry and
    /// replay reads it back from that row, so they all name the same provider request. The
    /// namespace (`ph<8 hex>`, migration 0011) keeps two deployments on one provider account
    /// apart; the nonce (`newKeyNonce()`) keeps a restored backup or a staging clone apart from
    /// the database it came from, whose namespace and id sequences it repeats.
    /// At most 64 characters (Mercado Pago's and Adyen's limit) for any bigint id and integer
    /// attempt with cycles below a million; PXP's 50 for ids below 10^10, cycles below 10^5 and
    /// attempts below 100.
    static func idempotencyKey(namespace: String, subscriptionID: Int64, cycle: Int, attempt: Int, nonce: String) -> String {
        "\(namespace)-sub-\(subscriptionID)-c\(cycle)-a\(attempt)-\(nonce)"
    }

    /// A fresh nonce for `idempotencyKey`: 8 hex characters. It only has to tell apart attempts
    /// that share installation, subscription id, cycle and attempt number, which happens only
    /// across a restore.
    static func newKeyNonce() -> String { RestoreSafeSuffix.make(byteCount: 4) }
}
