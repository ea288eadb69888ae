import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookAdmin

/// Attempting a charge: sending it under the job lease, and classifying the answer.
extension ChargeRecurringHandler {
    // MARK: Calling the provider

    /// Sends the charge with its key and records the answer. The caller has made sure it may be
    /// sent: a first attempt, or a charge that reconciliation showed was never executed (or
    /// cannot be asked about) while its key is inside the provider's idempotency window.
    /// - Parameter marked: `loaded` comes from `beginFirstAttempts`, which committed the mark
    ///   already (and it is a first call).
    func send(_ loaded: Loaded, client: any PaymentProviderClient, marked: Bool) async throws -> JobOutcome {
        let charge = loaded.charge
        let key = charge.idempotencyKey
        // Another worker may hold the job once its lease is gone: send nothing then.
        guard JobLease.current?.isHeld ?? true else {
            return .retry(error: "not sent: \(JobLeaseExpired())")
        }
        let previous: String?
        if marked {
            previous = loaded.previousTransactionReference
        } else {
            // Committed before the call: from here on this key may have charged.
            guard let row = try await pool.query(SubscriptionSQL.shared.markAttempted, [.int(charge.id), .timestamptz(now())]).rows.first else {
                return .succeeded  // settled meanwhile by another run of this key
            }
            previous = try row.decode("previous_transaction_reference")
        }
        let credential = ChargeContext.credential(loaded, previous: previous)
        let amount: Money
        do {
            amount = try Money(minorUnits: charge.amountMinor, currency: charge.currency)
        } catch {
            return .discard(.invalidAmount, message: "charge \(charge.id) has currency \(charge.currency)")
        }
        let result: ChargeResult
        let reference = Self.reference(loaded)
        let call: @Sendable () async throws -> ChargeResult = {
            try await client.charge(storedCredential: credential, amount: amount, reference: reference, idempotencyKey: key)
        }
        do {
            // Never two calls with one key at once: the call is refused or cancelled when the
            // lease ends (a cancelled call's outcome is unknown, like a timeout).
            if let lease = JobLease.current {
                result = try await lease.whileHeld(call)
            } else {
                result = try await call()
            }
        } catch let error as ProviderAPIError {
            return try await recordFailure(error, loaded)
        } catch is JobLeaseExpired {
            return .retry(error: "not sent: \(JobLeaseExpired())")
        }
        try await afterProviderCall?(key)
        return try await record(result, loaded)
    }

    /// The merchant reference of a charge: the subscription's reference and the cycle, the same
    /// on every attempt of the cycle (the idempotency key tells attempts apart).
    static func reference(_ loaded: Loaded) -> String {
        loaded.charge.merchantReference ?? "\(loaded.subscriptionReference)-c\(loaded.charge.cycle)"
    }

    private func recordFailure(_ error: ProviderAPIError, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let message = "\(loaded.provider) charge \(charge.idempotencyKey): \(error)"
        switch error.kind {
        case .timeout, .unavailable, .invalidResponse:
            // The provider may have executed it: unknown until a retry with this key says.
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(Charge.Status.unknown.rawValue), .text(message), .null, .null])
            count(loaded.provider, .unknown)
            logger.warning("charge outcome unknown; retrying with the same idempotency key", [
                "provider": .string(loaded.provider), "charge.id": .int(charge.id), "error.kind": .string(error.kind.rawValue),
            ])
            return .retry(error: "outcome unknown, retried with the same idempotency key: \(message)")
        case .unauthorized, .notFound:
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .retry(error: message)
        case .unsupported:
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .discard(.unsupported, message: message)
        }
    }

    // MARK: Recording outcomes

    /// - Parameter checks: look-ups made so far when this result comes from reconciliation (a
    ///   pending one then counts against `maxPendingChecks`); nil for a fresh answer.
    func record(_ result: ChargeResult, _ loaded: Loaded, checks: Int? = nil) async throws -> JobOutcome {
        switch result.outcome {
        case .succeeded: return try await recordSuccess(result, loaded)
        case .pending:
            let charge = loaded.charge
            try await pool.query(SubscriptionSQL.shared.recordOpen, [
                .int(charge.id), .text(Charge.Status.pending.rawValue), .null, result.providerPaymentID.map(PostgresValue.text) ?? .null,
                .text(result.providerStatus),
            ])
            if let checks { return try await stillPending(loaded, checks: checks) }
            count(loaded.provider, .pending)
            return .snooze(settings.pendingRecheck)
        case .declinedSoft: return try await recordSoftDecline(result, loaded)
        case .declinedHard: return try await recordHardDecline(result, loaded)
        }
    }
}
