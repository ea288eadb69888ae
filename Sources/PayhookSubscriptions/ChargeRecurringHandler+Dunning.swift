import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookAdmin
import PayhookCallbacks

/// Declines: the next dunning attempt, past due, and the merchant callbacks they send.
extension ChargeRecurringHandler {
    func recordSoftDecline(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let settings = self.settings
        let queue = self.queue
        let now = self.now()
        let recorded = try await pool.transaction { connection in
            try await Self.settleSoftDecline(result, loaded, settings: settings, queue: queue, at: now, on: connection)
        }
        if recorded { count(loaded.provider, .declinedSoft) }
        return .succeeded
    }

    /// Records a soft decline of `loaded` on `connection` (inside the caller's transaction) and
    /// queues what follows: the next dunning attempt under a new key, or, with the schedule
    /// exhausted, `past_due` and a `subscription.past_due` callback. Also what an operator's
    /// `charges resolve --as failed` does.
    /// - Returns: false when the charge was settled already (nothing written).
    static func settleSoftDecline(_ result: ChargeResult, _ loaded: Loaded, settings: SubscriptionSettings, queue: JobQueue,
                                  at now: Date, on connection: PostgresConnection) async throws -> Bool {
        let charge = loaded.charge
        let schedule = settings.dunningSchedule
        guard try await !connection.query(SubscriptionSQL.shared.recordSettled, [
            .int(charge.id), .text(Charge.Status.declinedSoft.rawValue), result.providerPaymentID.map(PostgresValue.text) ?? .null,
            .text(result.providerStatus), result.declineCode.map(PostgresValue.text) ?? .null,
        ]).rows.isEmpty else { return false }
        // A canceled subscription is not chased. A paused one keeps its cycle: the next attempt
        // is queued as usual and waits while paused (`hold`), resuming wakes it, and the merchant
        // hears of the decline now, since nothing else would tell them until the retry settles.
        let status = Subscription.Status(rawValue: loaded.subscriptionStatus)
        switch status {
        case .active, .completed, .paused: break
        default: return true
        }
        if charge.attempt <= schedule.count {
            let next = charge.attempt + 1
            let key = Charge.idempotencyKey(namespace: try await InstallationNamespace.load(on: connection),
                                            subscriptionID: charge.subscriptionID, cycle: charge.cycle, attempt: next,
                                            nonce: Charge.newKeyNonce())
            let due = now.addingTimeInterval(Double(schedule[charge.attempt - 1].components.seconds))
            // Keys carry a fresh nonce, so only the attempt's row tells that it exists already;
            // a job is queued only for the row this call wrote.
            let inserted = try await !connection.query(SubscriptionSQL.shared.insertRetryAttempt, [
                .int(charge.subscriptionID), .int(Int64(charge.cycle)), .int(Int64(next)), .text(key),
                .int(charge.amountMinor), .text(charge.currency), .text(loaded.provider), .timestamptz(due),
            ]).rows.isEmpty
            if inserted {
                try await queue.enqueue(ChargeRecurringArgs(
                    idempotencyKey: key, provider: loaded.provider, subscriptionID: charge.subscriptionID),
                    uniqueKey: key, runAt: due, maxAttempts: settings.chargeMaxAttempts, on: connection)
            }
            if status == .paused {
                let reason = "declined while the subscription is paused: \(result.declineCode ?? result.providerStatus); attempt \(next) of cycle \(charge.cycle) is due at \(JSONOutput.format(due)) and runs once resumed"
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.charge_failed",
                    webhookID: "subscription.charge_failed:\(charge.subscriptionID):c\(charge.cycle):a\(charge.attempt)",
                    loaded, result, reason: reason, status: .paused, at: now), on: connection)
            }
        } else {
            let reason = "dunning exhausted after \(charge.attempt) attempt(s) for cycle \(charge.cycle): \(result.declineCode ?? result.providerStatus)"
            if try await !connection.query(SubscriptionSQL.shared.markPastDue, [.int(charge.subscriptionID), .text(reason)]).rows.isEmpty {
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.past_due", webhookID: "subscription.past_due:\(charge.subscriptionID):c\(charge.cycle)",
                    loaded, result, reason: reason, at: now), on: connection)
            }
        }
        return true
    }

    func recordHardDecline(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let queue = self.queue
        let now = self.now()
        let recorded = try await pool.transaction { connection in
            guard try await !connection.query(SubscriptionSQL.shared.recordSettled, [
                .int(charge.id), .text(Charge.Status.declinedHard.rawValue), result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus), result.declineCode.map(PostgresValue.text) ?? .null,
            ]).rows.isEmpty else { return false }
            let reason = "hard decline of cycle \(charge.cycle) attempt \(charge.attempt): \(result.declineCode ?? result.providerStatus)"
            if try await !connection.query(SubscriptionSQL.shared.markPastDue, [.int(charge.subscriptionID), .text(reason)]).rows.isEmpty {
                try await MerchantCallbackOutbox(queue: queue).enqueue(Self.callback(
                    "subscription.charge_failed",
                    webhookID: "subscription.charge_failed:\(charge.subscriptionID):c\(charge.cycle):a\(charge.attempt)",
                    loaded, result, reason: reason, at: now), on: connection)
            }
            return true
        }
        if recorded { count(loaded.provider, .declinedHard) }
        return .succeeded
    }

    static func callback(_ type: String, webhookID: String, _ loaded: Loaded, _ result: ChargeResult, reason: String,
                         status: Subscription.Status = .pastDue, at date: Date) -> MerchantCallback {
        let charge = loaded.charge
        return MerchantCallback(
            webhookID: webhookID, type: type,
            data: .object([
                .init("subscription_id", .int(charge.subscriptionID)), .init("reference", .string(loaded.subscriptionReference)),
                .init("status", .string(status.rawValue)), .init("reason", .string(reason)),
                .init("cycle", .int(Int64(charge.cycle))), .init("attempt", .int(Int64(charge.attempt))),
                .init("charge_id", .int(charge.id)), .init("provider", .string(loaded.provider)),
                .init("provider_payment_id", .optional(result.providerPaymentID)),
                .init("decline_code", .optional(result.declineCode)),
                .init("amount", .object([.init("value", .int(charge.amountMinor)), .init("currency", .string(charge.currency))])),
            ]),
            orderID: nil, subscriptionID: charge.subscriptionID, url: nil, occurredAt: date)
    }
}
