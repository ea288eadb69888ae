package import Foundation
package import PayhookPostgres
import PayhookProviders
package import PayhookQueue
import PayhookOperations
package import PayhookAdmin
package import PayhookCore

/// What an operator may do to one charge: settle by hand a charge whose outcome payhook cannot
/// learn (`charge_outcome_unknown`: the provider's idempotency window has passed, no webhook
/// came, no lookup answers). The one implementation behind `payhook charges resolve`.
///
/// Each resolution is one transaction: lock the charge, settle it exactly as the charge job
/// would have on that answer, resolve the job's open dead letter and write the `audit_log` row.
/// A charge that is settled already changes nothing (resolving twice is harmless).
package struct ChargeOperations: Sendable {
    package init(pool: PostgresPool, queue: JobQueue, settings: SubscriptionSettings, now: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.queue = queue
        self.settings = settings
        self.now = now
    }

    /// What the operator found at the provider.
    package enum Resolution: String, Sendable, CaseIterable {
        /// The provider took the money: the charge succeeds with the provider's payment id.
        case succeeded
        /// The provider never executed it: recorded as a soft decline, so the cycle continues as
        /// after one (the next dunning attempt under a new key, or `past_due` and its callback).
        case failed
    }

    package struct Outcome: Sendable {
        let charge: Charge
        let changed: Bool
        package let effect: String

        package var json: JSONOutput {
            .object([.init("charge", charge.json), .init("changed", .bool(changed)), .init("effect", .string(effect))])
        }
    }

    let pool: PostgresPool
    let queue: JobQueue
    let settings: SubscriptionSettings
    var now: @Sendable () -> Date = { Date() }

    /// Settles charge `id` as the operator says.
    /// - Parameter providerPaymentID: the provider's id of the payment; required for `.succeeded`
    ///   (refunds and disputes are traced by it).
    /// - Throws: `.invalidArgument` (fields `note`, `provider_payment_id`, `id`) for a missing note,
    ///   a success without a payment id, or a charge never sent; `.notFound`; `.conflict` when the
    ///   cycle already has a successful charge; `.databaseUnavailable`.
    package func resolve(id: Int64, as resolution: Resolution, providerPaymentID: String?,
                 by action: OperatorAction) async throws(OperationsError) -> Outcome {
        guard let note = action.note, !note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw .invalid("note", "resolving a charge needs a note saying what the provider's records show")
        }
        let paymentID = providerPaymentID?.trimmingCharacters(in: .whitespaces)
        if resolution == .succeeded, paymentID?.isEmpty ?? true {
            throw .invalid("provider_payment_id", "a success needs the provider's payment id")
        }
        let settings = self.settings
        let queue = self.queue
        let at = now()
        do {
            return try await pool.transaction { connection in
                guard let row = try await connection.query(SubscriptionSQL.shared.lockChargeByID, [.int(id)]).rows.first else {
                    throw OperationsError(.notFound, "no charge with id \(id)")
                }
                let loaded = try ChargeRecurringHandler.Loaded(row: row)
                let charge = loaded.charge
                guard Charge.Status(rawValue: charge.status)?.isSettled == false else {
                    return Outcome(charge: charge, changed: false, effect: "already \(charge.status); nothing changed")
                }
                guard charge.attemptedAt != nil else {
                    throw OperationsError.invalid("id", "charge \(id) was never sent to the provider; its job sends it, or pause or cancel the subscription instead")
                }
                let effect: String
                switch resolution {
                case .succeeded:
                    let providerStatus = "operator:succeeded"
                    let success = ChargeRecurringHandler.success(loaded, providerPaymentID: paymentID ?? "", providerStatus: providerStatus)
                    do {
                        _ = try await ChargeRecurringHandler.settle([success], on: connection)
                    } catch let error as PostgresError where error.constraint == "charges_one_success_per_cycle" {
                        throw OperationsError(.conflict, "cycle \(charge.cycle) of subscription \(charge.subscriptionID) already has a successful charge; refund one of them at the provider and resolve this one as failed")
                    }
                    effect = "charge \(id) succeeded with \(loaded.provider) payment \(paymentID ?? "")"
                case .failed:
                    let result = ChargeResult(outcome: .declinedSoft, providerPaymentID: nil, providerStatus: "operator:failed",
                                              declineCode: "operator")
                    _ = try await ChargeRecurringHandler.settleSoftDecline(result, loaded, settings: settings, queue: queue,
                                                                           at: at, on: connection)
                    effect = "charge \(id) failed; the cycle continues as after a soft decline"
                }
                try await DeadLetterStore.resolveJobLetter(kind: ChargeRecurringArgs.kind, uniqueKey: charge.idempotencyKey, as: .discarded,
                                                           by: action.actor, note: "charge resolved as \(resolution.rawValue): \(note)",
                                                           on: connection)
                try await AuditTrail.record(
                    on: connection, by: action, action: "charge.resolve", target: "charge:\(id)",
                    details: [
                        .init("as", .string(resolution.rawValue)), .init("provider_payment_id", .optional(paymentID)),
                        .init("previous_status", .string(charge.status)), .init("idempotency_key", .string(charge.idempotencyKey)),
                        .init("note", .string(note)), .init("effect", .string(effect)),
                    ] + action.context)
                guard let settled = try await connection.query(SubscriptionSQL.shared.lockChargeByID, [.int(id)]).rows.first else {
                    throw OperationsError(.notFound, "no charge with id \(id)")
                }
                return Outcome(charge: try Charge(row: settled), changed: true, effect: effect)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }
}
