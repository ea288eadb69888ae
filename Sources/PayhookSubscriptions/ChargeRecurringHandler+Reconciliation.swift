import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookOperations
import PayhookAdmin

/// Reconciling a charge that was sent before and has no final answer.
extension ChargeRecurringHandler {
    // MARK: Reconciling a charge that may have executed

    /// Settles a charge that was sent before and has no final answer (unknown, or pending),
    /// from what is known before anything is sent again: what a webhook stored, then the
    /// provider's lookup. Sends the same key again only when neither knows the charge and the
    /// key is still inside the provider's idempotency window.
    func reconcile(_ loaded: Loaded, client: any PaymentProviderClient) async throws -> JobOutcome {
        let charge = loaded.charge
        let checks = try await pool.query(SubscriptionSQL.shared.countCheck, [.int(charge.id)]).rows.first?.decode("calls", as: Int.self) ?? 0
        if let stored = try await storedResult(loaded) {
            return try await settle(stored, loaded, checks: checks)
        }
        let lookup: ChargeLookup
        do {
            lookup = try await client.lookUpCharge(
                idempotencyKey: charge.idempotencyKey, providerPaymentID: charge.providerPaymentID,
                reference: Self.reference(loaded), sentAt: charge.attemptedAt ?? now())
        } catch {
            // Nobody can tell: wait and ask again; never send on it.
            let message = "\(loaded.provider) charge \(charge.idempotencyKey): look-up failed: \(error)"
            guard insideWindow(loaded) else { return try await outcomeUnknown(loaded, lastError: message) }
            try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(charge.status), .text(message), .null, .null])
            return .retry(error: "outcome unknown, not sent again until the provider answers: \(message)")
        }
        switch lookup {
        case .found(let result):
            // The provider's own answer, final or still pending (a pending one is asked again
            // at the next check; Mercado Pago's order ids are no payment ids for `fetchPayment`).
            return try await settle(result, loaded, checks: checks)
        case .notFound, .unsupported:
            if let paymentID = charge.providerPaymentID {
                // The provider answered with an id: it has the charge, nothing is sent again.
                if let fetched = await fetchedResult(paymentID, client: client) {
                    return try await settle(fetched, loaded, checks: checks)
                }
                return try await stillPending(loaded, checks: checks)
            }
            guard insideWindow(loaded) else {
                return try await outcomeUnknown(loaded, lastError: charge.lastError ?? "no answer from \(loaded.provider)")
            }
            if charge.status == Charge.Status.pending.rawValue, checks > settings.maxPendingChecks {
                return try await stillPending(loaded, checks: checks)
            }
            return try await send(loaded, client: client, marked: false)
        }
    }

    /// Records what reconciliation found. A final answer also resolves the job's open dead letter
    /// (a `charge_outcome_unknown` one woken by the provider's webhook): nothing is left to replay.
    private func settle(_ result: ChargeResult, _ loaded: Loaded, checks: Int) async throws -> JobOutcome {
        let outcome = try await record(result, loaded, checks: checks)
        if result.outcome != .pending {
            _ = try await pool.withConnection { connection in
                try await DeadLetterStore.resolveJobLetter(kind: Self.kind, uniqueKey: loaded.charge.idempotencyKey, as: .discarded, by: "payhook",
                    note: "charge settled by reconciliation as \(result.outcome.rawValue) (\(result.providerStatus))", on: connection)
            }
        }
        return outcome
    }

    /// True while the charge's key may still be sent: its first attempt is younger than the
    /// provider's idempotency window.
    private func insideWindow(_ loaded: Loaded) -> Bool {
        guard let first = loaded.charge.attemptedAt else { return true }
        return now() < first.addingTimeInterval(Double(settings.idempotencyWindow(loaded.provider).components.seconds))
    }

    /// The charge outlived its key: dead letter `charge_outcome_unknown`, the charge `unknown`.
    private func outcomeUnknown(_ loaded: Loaded, lastError: String) async throws -> JobOutcome {
        let charge = loaded.charge
        let window = settings.idempotencyWindow(loaded.provider).components.seconds
        let discard = JobOutcome.discard(.chargeOutcomeUnknown, message: "\(loaded.provider) charge \(charge.id) (key \(charge.idempotencyKey)) was first sent at \(charge.attemptedAt.map(JSONOutput.format) ?? "?"), longer ago than \(loaded.provider) keeps idempotency keys (\(window / 3600) h); payhook will not send it again. It settles when the provider's webhook for reference \(Self.reference(loaded)) arrives, on replay if a look-up answers, or by `payhook charges resolve \(charge.id) --as succeeded|failed --note …`. Last error: \(lastError)")
        let message = discard.recordedError ?? ""
        try await pool.query(SubscriptionSQL.shared.recordOpen, [.int(charge.id), .text(Charge.Status.unknown.rawValue), .text(message), .null, .null])
        count(loaded.provider, "outcome_unknown")
        logger.error("charge outcome unknown after the idempotency window; not sent again", [
            "provider": .string(loaded.provider), "charge.id": .int(charge.id),
        ])
        return discard
    }

    func stillPending(_ loaded: Loaded, checks: Int) async throws -> JobOutcome {
        let charge = loaded.charge
        guard checks <= settings.maxPendingChecks else {
            return .discard(.stillPending, message: "\(loaded.provider) charge \(charge.idempotencyKey) (\(charge.providerPaymentID ?? "no provider id")) is pending after \(settings.maxPendingChecks) checks; reconcile it at the provider")
        }
        return .snooze(settings.pendingRecheck)
    }

    /// What a webhook stored for the charge, as a charge result; nil when nothing was stored.
    private func storedResult(_ loaded: Loaded) async throws -> ChargeResult? {
        guard let row = try await pool.query(SubscriptionSQL.shared.storedChargePayment, [.int(loaded.charge.id)]).rows.first else {
            return nil
        }
        let paymentID: String = try row.decode("provider_payment_id")
        let stored: String = try row.decode("status")
        guard let status = PaymentStatus(rawValue: stored) else { return nil }
        return ChargeResult(outcome: Self.outcome(of: status) ?? .pending, providerPaymentID: paymentID,
                            providerStatus: "webhook:\(stored)")
    }

    /// The payment `paymentID` as the provider reports it, when final; nil while pending or
    /// when the provider cannot say (unsupported look-ups, failures: the next check asks again).
    private func fetchedResult(_ paymentID: String, client: any PaymentProviderClient) async -> ChargeResult? {
        guard let snapshot = try? await client.fetchPayment(id: paymentID), let status = snapshot.status,
              let outcome = Self.outcome(of: status) else { return nil }
        return ChargeResult(outcome: outcome, providerPaymentID: paymentID,
                            providerStatus: snapshot.providerStatus ?? status.rawValue, declineCode: snapshot.statusDetail)
    }

    /// Final canonical statuses as charge outcomes. A decline reported this way carries no
    /// classification, so it counts as soft: dunning retries, and a hard reason comes back hard.
    static func outcome(of status: PaymentStatus) -> ChargeOutcome? {
        switch status {
        case .authorized, .captured, .partiallyRefunded, .refunded, .chargedBack: .succeeded
        case .declined, .failed, .canceled, .expired: .declinedSoft
        case .pending: nil
        }
    }
}
