package import Foundation
package import PayhookCore
package import PayhookPostgres
import PayhookQueue
import PayhookOperations
package import PayhookAdmin
import PayhookCallbacks

/// Creates, lists, shows, cancels, pauses and resumes subscriptions: the one implementation
/// behind `payhook subscriptions` and the admin API's `/v1/subscriptions`.
///
/// Every change is one transaction that locks what it reads, changes the row and writes its
/// `audit_log` row, so the log never disagrees with the tables. Asking for the state a
/// subscription is already in changes nothing and writes nothing (`changed: false`).
package struct SubscriptionOperations: Sendable {
    package init(pool: PostgresPool, now: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.now = now
    }

    let pool: PostgresPool
    var now: @Sendable () -> Date = { Date() }

    /// What a state change did.
    package struct Outcome: Sendable {
        package let subscription: Subscription
        package let changed: Bool

        package var json: JSONOutput { .object([.init("subscription", subscription.json), .init("changed", .bool(changed))]) }
    }

    /// One subscription with its charges, oldest cycle first.
    package struct Detail: Sendable {
        package let subscription: Subscription
        package let charges: [Charge]

        package var json: JSONOutput {
            guard case .object(let members) = subscription.json else { return subscription.json }
            return .object(members + [.init("charges", .array(charges.map(\.json)))])
        }
    }

    /// Creates an active subscription whose first cycle is due at `start_at`.
    /// - Throws: `.notFound` (field `vault_token`/`vault_token_id`) for an unknown token;
    ///   `.invalidArgument` for a disabled or expired one; `.conflict` (field `reference`) when
    ///   the reference is taken; `.databaseUnavailable`.
    package func create(_ draft: NewSubscription, by action: OperatorAction) async throws(OperationsError) -> Subscription {
        do {
            return try await pool.transaction { connection in
                let tokenRow: PostgresRow?
                let field: String
                switch draft.token {
                case .id(let id):
                    field = "vault_token_id"
                    tokenRow = try await connection.query(SubscriptionSQL.shared.lockTokenByID, [.int(id)]).rows.first
                case .provider(let provider, let token):
                    field = "vault_token"
                    tokenRow = try await connection.query(SubscriptionSQL.shared.lockTokenByProviderToken,
                                                          [.text(provider.rawValue), .text(token)]).rows.first
                }
                guard let tokenRow else {
                    throw OperationsError(.notFound, "no vault token matches \(field); tokens are stored when the provider reports them", field: field)
                }
                let tokenID: Int64 = try tokenRow.decode("id")
                let tokenStatus: String = try tokenRow.decode("status")
                guard tokenStatus == VaultTokenStatus.active.rawValue else {
                    throw OperationsError.invalid(field, "vault token \(tokenID) is \(tokenStatus); it cannot be charged")
                }
                // A Mercado Pago card id is charged only through a payment profile; without one
                // every cycle would be refused by the provider.
                let kind = (try tokenRow.decode("token_kind", as: String?.self)).flatMap(VaultTokenKind.init(rawValue:))
                let profile: String? = try tokenRow.decode("payment_profile_id")
                if kind == .cardID, profile == nil {
                    throw OperationsError.invalid(field, "vault token \(tokenID) is a Mercado Pago card id with no payment profile; "
                        + "merchant-initiated charges need the customer's payment profile (automatic_payments.payment_profile_id): "
                        + "register the profile as a vault token and subscribe on it")
                }
                let inserted = try await connection.query(SubscriptionSQL.shared.insertSubscription, [
                    .int(tokenID), .text(draft.reference), .int(draft.amount.minorUnits), .text(draft.amount.currency),
                    .jsonb(draft.interval.json.rendered), .timestamptz(draft.startAt),
                    draft.maxCycles.map { .int(Int64($0)) } ?? .null, draft.endAt.map(PostgresValue.timestamptz) ?? .null,
                ])
                guard let id = try inserted.rows.first?.decode("id", as: Int64.self) else {
                    throw OperationsError(.conflict, "reference \(draft.reference) is already used by another subscription", field: "reference")
                }
                guard let row = try await connection.query(SubscriptionSQL.shared.selectSubscription, [.int(id)]).rows.first else {
                    throw OperationsError(.databaseUnavailable, "subscription \(id) vanished while being created")
                }
                let subscription = try Subscription(row: row)
                try await AuditTrail.record(
                    on: connection, by: action, action: "subscription.create", target: "subscription:\(id)",
                    details: [.init("subscription", subscription.json), .init("note", .optional(action.note))] + action.context)
                return subscription
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// Subscriptions newest first, optionally of one status and provider.
    package func list(status: Subscription.Status?, provider: String?, limit: Int) async throws(OperationsError) -> [Subscription] {
        do {
            return try await pool.query(SubscriptionSQL.shared.listSubscriptions, [
                status.map { .text($0.rawValue) } ?? .null, provider.map { .text($0) } ?? .null, .int(Int64(limit)),
            ]).map { try Subscription(row: $0) }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// One subscription and every charge attempt made for it.
    /// - Throws: `.notFound` (field `id`), `.databaseUnavailable`.
    package func detail(id: Int64) async throws(OperationsError) -> Detail {
        do {
            return try await pool.withConnection { connection in
                guard let row = try await connection.query(SubscriptionSQL.shared.selectSubscription, [.int(id)]).rows.first else {
                    throw OperationsError(.notFound, "no subscription with id \(id)", field: "id")
                }
                let charges = try await connection.query(SubscriptionSQL.shared.selectCharges, [.int(id)]).map { try Charge(row: $0) }
                return Detail(subscription: try Subscription(row: row), charges: charges)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// Stops charging for good. Charges already sent are settled as usual; attempts not yet
    /// sent are skipped, each with a `subscription.charge_skipped` callback. Canceling a canceled
    /// subscription changes nothing.
    /// - Throws: `.conflict` for a completed subscription, `.notFound`, `.databaseUnavailable`.
    package func cancel(id: Int64, by action: OperatorAction) async throws(OperationsError) -> Outcome {
        try await change(id: id, verb: "cancel", by: action) { subscription, connection in
            switch subscription.status {
            case .canceled: return false
            case .completed:
                throw OperationsError(.conflict, "subscription \(id) is completed; there is nothing left to cancel", field: "id")
            case .active, .paused, .pastDue:
                try await connection.query(SubscriptionSQL.shared.setStatus, [
                    .int(id), .text(Subscription.Status.canceled.rawValue), .text(Self.reason("canceled", action)),
                ])
                return true
            }
        }
    }

    /// Stops charging until resumed.
    /// - Throws: `.conflict` unless active (pausing a paused one changes nothing).
    package func pause(id: Int64, by action: OperatorAction) async throws(OperationsError) -> Outcome {
        try await change(id: id, verb: "pause", by: action) { subscription, connection in
            switch subscription.status {
            case .paused: return false
            case .active:
                try await connection.query(SubscriptionSQL.shared.setStatus, [
                    .int(id), .text(Subscription.Status.paused.rawValue), .text(Self.reason("paused", action)),
                ])
                return true
            case .pastDue, .canceled, .completed:
                throw OperationsError(.conflict, "subscription \(id) is \(subscription.status.rawValue); only an active one can be paused", field: "id")
            }
        }
    }

    /// Charges again, from the first cycle due at or after now: cycles that fell due while it
    /// was paused or past due are not charged (and count toward `max_cycles`); one
    /// `subscription.cycles_skipped` callback names them. Attempts of cycles
    /// that fell due before the pause, which waited meanwhile, run now.
    /// - Throws: `.invalidArgument` (field `vault_token`) when its token is not active;
    ///   `.conflict` when canceled or completed (resuming an active one changes nothing).
    package func resume(id: Int64, by action: OperatorAction) async throws(OperationsError) -> Outcome {
        let now = self.now()
        return try await change(id: id, verb: "resume", by: action) { subscription, connection in
            switch subscription.status {
            case .active: return false
            case .canceled, .completed:
                throw OperationsError(.conflict, "subscription \(id) is \(subscription.status.rawValue) and cannot be resumed", field: "id")
            case .paused, .pastDue:
                // Waits for a token change in flight, like create.
                let token = try await connection.query(SubscriptionSQL.shared.lockTokenByID, [.int(subscription.vaultToken.id)]).rows.first
                let tokenStatus = try token?.decode("status", as: String.self) ?? "missing"
                guard tokenStatus == VaultTokenStatus.active.rawValue else {
                    throw OperationsError.invalid("vault_token", "vault token \(subscription.vaultToken.id) is \(tokenStatus); store a new token and create a new subscription")
                }
                var cycle = subscription.cycle
                var due = subscription.nextChargeAt
                if let interval = subscription.interval, due < now {
                    cycle = max(cycle, interval.lastCycle(dueAtOrBefore: now, start: subscription.startAt) + 1)
                    due = interval.dueDate(cycle: cycle, start: subscription.startAt)
                }
                try await connection.query(SubscriptionSQL.shared.resume, [.int(id), .int(Int64(cycle)), .timestamptz(due)])
                let waiting = try await connection.query(SubscriptionSQL.shared.waitingChargeKeys, [.int(id), .timestamptz(now)])
                    .rows.map { row throws(PostgresError) in try row.decode("idempotency_key", as: String.self) }
                try await JobQueue.wake(kind: ChargeRecurringArgs.kind, uniqueKeys: waiting, on: connection)
                // Cycles that fell due while it was not active are not charged; the merchant is told
                // of those that exist, none past max_cycles or end_at.
                var lastSkipped = cycle - 1
                if let maxCycles = subscription.maxCycles { lastSkipped = min(lastSkipped, maxCycles) }
                if let endAt = subscription.endAt, let interval = subscription.interval {
                    lastSkipped = min(lastSkipped, interval.lastCycle(dueAtOrBefore: endAt, start: subscription.startAt))
                }
                if lastSkipped >= subscription.cycle {
                    try await MerchantCallbackOutbox(queue: JobQueue(pool: pool)).enqueue(SubscriptionScheduler.skippedCallback(
                        subscriptionID: id, reference: subscription.reference, amountMinor: subscription.amountMinor,
                        currency: subscription.currency, cycles: subscription.cycle...lastSkipped,
                        reason: "fell due while the subscription was \(subscription.status.rawValue); not charged after resuming",
                        at: now), on: connection)
                }
                return true
            }
        }
    }

    private static func reason(_ verb: String, _ action: OperatorAction) -> String {
        "\(verb) by \(action.actor)" + (action.note.map { ": " + $0 } ?? "")
    }

    private func change(
        id: Int64, verb: String, by action: OperatorAction,
        _ body: @Sendable (Subscription, PostgresConnection) async throws -> Bool
    ) async throws(OperationsError) -> Outcome {
        do {
            return try await pool.transaction { connection in
                guard let row = try await connection.query(SubscriptionSQL.shared.lockSubscription, [.int(id)]).rows.first else {
                    throw OperationsError(.notFound, "no subscription with id \(id)", field: "id")
                }
                let before = try Subscription(row: row)
                guard try await body(before, connection) else { return Outcome(subscription: before, changed: false) }
                guard let afterRow = try await connection.query(SubscriptionSQL.shared.selectSubscription, [.int(id)]).rows.first else {
                    throw OperationsError(.databaseUnavailable, "subscription \(id) vanished while locked")
                }
                let after = try Subscription(row: afterRow)
                try await AuditTrail.record(
                    on: connection, by: action, action: "subscription.\(verb)", target: "subscription:\(id)",
                    details: [
                        .init("status_before", .string(before.status.rawValue)), .init("status_after", .string(after.status.rawValue)),
                        .init("note", .optional(action.note)),
                    ] + action.context)
                return Outcome(subscription: after, changed: true)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }
}
