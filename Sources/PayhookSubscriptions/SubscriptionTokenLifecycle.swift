import Foundation
import PayhookCore
import PayhookPostgres
import PayhookQueue
import PayhookOperations
import PayhookCallbacks

/// What a vault token's status means for its subscriptions: a token disabled or expired pauses
/// every active subscription on it (status `paused`, the reason recorded) and queues the
/// merchant callback `subscription.paused`; an active (created, updated) token changes nothing,
/// so an account-updater refresh keeps subscriptions running.
///
/// Called by `CanonicalEventApplier.applyToken` on the processor's connection, inside its
/// transaction and while it holds the token row (`FOR UPDATE`), so the pause commits with the
/// token change, and a subscription being created on the token (which takes the row
/// `FOR SHARE`) either commits first and is paused here, or waits and sees the new status.
package enum SubscriptionTokenLifecycle {
    /// Enqueues on the caller's connection only. The pool is never contacted: `JobQueue` needs
    /// one to exist, and the processor's transaction is where these jobs must commit.
    private static let outbox = MerchantCallbackOutbox(
        queue: JobQueue(pool: PostgresPool(conninfo: "", maxConnections: 1)))

    /// Applies a token's stored status to its subscriptions.
    /// - Parameters:
    ///   - tokenID: the `vault_tokens` row.
    ///   - status: the token's status as just written.
    ///   - occurredAt: when the provider says it changed; part of the callback's identity.
    /// - Returns: the subscriptions paused.
    /// - Throws: `PostgresError`; the caller's transaction rolls back.
    @discardableResult
    static func tokenStatusChanged(tokenID: Int64, status: VaultTokenStatus, occurredAt: Date?,
                                   on connection: PostgresConnection) async throws -> [Int64] {
        guard status != .active else { return [] }
        let reason = "vault token \(tokenID) \(status.rawValue)"
        let rows = try await connection.query(SubscriptionSQL.shared.pauseForToken, [.int(tokenID), .text(reason)])
        var paused: [Int64] = []
        let at = occurredAt ?? Date()
        // The fact is "this subscription was paused by this token change": the same change
        // replayed finds nothing active and pauses (and reports) nothing twice.
        let fact = occurredAt.map { String(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? "t\(Int64(Date().timeIntervalSince1970))"
        for row in rows.rows {
            let id: Int64 = try row.decode("id")
            let reference: String = try row.decode("reference")
            paused.append(id)
            try await outbox.enqueue(MerchantCallback(
                webhookID: "subscription.paused:\(id):token-\(tokenID)-\(status.rawValue)-\(fact)", type: "subscription.paused",
                data: .object([
                    .init("subscription_id", .int(id)), .init("reference", .string(reference)),
                    .init("status", .string(Subscription.Status.paused.rawValue)), .init("reason", .string(reason)),
                    .init("vault_token_id", .int(tokenID)), .init("token_status", .string(status.rawValue)),
                ]),
                orderID: nil, subscriptionID: id, url: nil, occurredAt: at), on: connection)
        }
        return paused
    }
}
