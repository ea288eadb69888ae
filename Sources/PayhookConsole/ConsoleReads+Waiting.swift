import Foundation
import PayhookAdmin
import PayhookPostgres

/// The "waiting on" lists beyond the provider sweep's own (`ProviderSweep.waiting`): what
/// payhook is still chasing at the provider, callbacks the merchant has not taken, and what only
/// a person can settle. Each read is one bounded statement in `ConsoleChartSQL`.
extension ConsoleReads {
    struct ProviderCheck: Sendable {
        /// `payment`, `charge`, `order` (the sweep asks the provider) or `fulfillment` (an order
        /// waits for a fact from a webhook).
        let subject: String
        let subjectID: Int64
        let provider: String
        let reason: String
        let checks: Int64
        let lastCheckedAt: Date?
        let reference: String?
        let status: String
        let since: Date?
    }

    func providerChecks(limit: Int) async throws(OperationsError) -> [ProviderCheck] {
        try await rows(ConsoleChartSQL.shared.providerChecks, [.int(Int64(limit))]) { row in
            ProviderCheck(subject: try row.decode("subject"), subjectID: try row.decode("subject_id"),
                          provider: try row.decode("provider"), reason: try row.decode("reason"), checks: try row.decode("checks"),
                          lastCheckedAt: try row.decode("last_checked_at"), reference: try row.decode("reference"),
                          status: try row.decode("status"), since: try row.decode("since"))
        }
    }

    struct MerchantEndpoint: Sendable {
        let url: String
        let callbacks: Int64
        /// Callbacks whose retries are exhausted (`failed`): each has a dead letter.
        let givenUp: Int64
        let oldest: Date
        let lastStatusCode: Int64?
        let lastError: String?
        let nextAttempt: Date?
        let firstOrder: Int64?
        let firstWebhookID: String
        /// The oldest open dead letter of a callback given up here.
        let firstLetter: Int64?
    }

    func merchantEndpoints(limit: Int) async throws(OperationsError) -> [MerchantEndpoint] {
        try await rows(ConsoleChartSQL.shared.merchantEndpoints, [.int(Int64(limit))]) { row in
            MerchantEndpoint(url: try row.decode("url"), callbacks: try row.decode("callbacks"), givenUp: try row.decode("given_up"),
                             oldest: try row.decode("oldest"), lastStatusCode: try row.decode("last_status_code"),
                             lastError: try row.decode("last_error"), nextAttempt: try row.decode("next_attempt"),
                             firstOrder: try row.decode("first_order"), firstWebhookID: try row.decode("first_webhook"),
                             firstLetter: try row.decode("first_letter"))
        }
    }

    struct OrderInReview: Sendable {
        let id: Int64
        let provider: String
        let account: String
        let reference: String
        let reason: String
        let since: Date
        /// The open dead letter of its discarded check; replaying it checks the order again.
        let letter: Int64?
    }

    func ordersInReview(limit: Int) async throws(OperationsError) -> [OrderInReview] {
        try await rows(ConsoleChartSQL.shared.ordersInReview, [.int(Int64(limit))]) { row in
            OrderInReview(id: try row.decode("id"), provider: try row.decode("provider"), account: try row.decode("account"),
                          reference: try row.decode("reference"), reason: try row.decode("reason"),
                          since: try row.decode("updated_at"), letter: try row.decode("letter"))
        }
    }

    /// Open dead letters grouped by reason, provider and source, largest group first (the
    /// overview's statement, without the other five the overview runs).
    func openLetterGroups() async throws(OperationsError) -> [Overview.LetterGroup] {
        try await rows(ConsoleSQL.shared.openLettersByReason, read: Overview.LetterGroup.init(row:))
    }

    struct UnknownCharge: Sendable {
        let id: Int64
        let subscriptionID: Int64
        let provider: String
        let idempotencyKey: String
        let amountMinor: Int64
        let currency: String
        let since: Date
        let lastError: String
    }

    func unknownCharges(limit: Int) async throws(OperationsError) -> [UnknownCharge] {
        try await rows(ConsoleChartSQL.shared.unknownCharges, [.int(Int64(limit))]) { row in
            UnknownCharge(id: try row.decode("id"), subscriptionID: try row.decode("subscription_id"), provider: try row.decode("provider"),
                          idempotencyKey: try row.decode("idempotency_key"), amountMinor: try row.decode("amount_minor"),
                          currency: try row.decode("currency"), since: try row.decode("created_at"), lastError: try row.decode("last_error"))
        }
    }
}
