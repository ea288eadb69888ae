import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookAdmin
import PayhookLedger

/// Settling a successful charge and the payment or order it made, alone or in batches.
extension ChargeRecurringHandler {
    func recordSuccess(_ result: ChargeResult, _ loaded: Loaded) async throws -> JobOutcome {
        let charge = loaded.charge
        let provider = loaded.provider
        let paymentID = result.providerPaymentID
        let recorded: Bool
        do {
            recorded = try await settleSuccess(result, loaded)
        } catch {
            guard let refused = error as? PostgresError, refused.kind == .uniqueViolation,
                  refused.constraint == "charges_one_success_per_cycle" else { throw error }
            let discard = JobOutcome.discard(.duplicateSuccess, message: "\(provider) reported a second successful charge for subscription \(charge.subscriptionID) cycle \(charge.cycle) (key \(charge.idempotencyKey), payment \(paymentID ?? "?")); refund one")
            let message = discard.recordedError ?? ""
            try await pool.query(SubscriptionSQL.shared.recordDuplicateSuccess, [
                .int(charge.id), .text(message), paymentID.map(PostgresValue.text) ?? .null,
            ])
            count(provider, "duplicate_success")
            logger.error("second successful charge for one cycle", [
                "provider": .string(provider), "subscription.id": .int(charge.subscriptionID), "charge.id": .int(charge.id),
            ])
            return discard
        }
        if recorded { count(provider, .succeeded) }
        return .succeeded
    }

    /// Settles a successful charge: under the processor's lock of the payment (or order), upsert
    /// the row the later webhook will update, then mark the charge and link it; in a batch with
    /// other jobs' successes when it can. False when the charge was settled already.
    private func settleSuccess(_ result: ChargeResult, _ loaded: Loaded) async throws -> Bool {
        let charge = loaded.charge
        guard let paymentID = result.providerPaymentID else {
            return try await !pool.query(SubscriptionSQL.shared.recordSettled, [
                .int(charge.id), .text(Charge.Status.succeeded.rawValue), .null, .text(result.providerStatus), .null,
            ]).rows.isEmpty
        }
        let success = Self.success(loaded, providerPaymentID: paymentID, providerStatus: result.providerStatus)
        if let settled = await successes.submit(success) { return settled }
        // The batch failed: this charge alone, where a second success of the cycle is told apart.
        return try await Self.settle([success], pool: pool).contains(charge.id)
    }

    // MARK: Batched statements

    /// The success to settle for `loaded`, paid by the provider's `providerPaymentID`.
    static func success(_ loaded: Loaded, providerPaymentID: String, providerStatus: String) -> Success {
        let asOrder = loaded.provider == ProviderID.mercadopago.rawValue
        return Success(chargeID: loaded.charge.id, provider: loaded.provider, providerPaymentID: providerPaymentID,
                       merchantReference: asOrder ? nil : reference(loaded), providerStatus: providerStatus,
                       status: ChargeResult.paymentStatus(ofSuccess: providerStatus, provider: loaded.provider).rawValue,
                       asOrder: asOrder)
    }

    /// A success to settle: the charge and the payment (Adyen, PXP) or order (Mercado Pago) it made.
    package struct Success: Sendable {
        let chargeID: Int64
        let provider: String
        let providerPaymentID: String
        let merchantReference: String?
        let providerStatus: String
        /// The canonical status of the payment or order row.
        let status: String
        let asOrder: Bool

        /// The processor's advisory-lock key of the row the webhook will update.
        var lockKey: AdvisoryLockKey {
            asOrder ? .order(provider: provider, id: providerPaymentID) : .payment(provider: provider, id: providerPaymentID)
        }
    }

    /// Marks the first attempts of `keys` in one statement. One element per key: the loaded
    /// charge when it was marked, nil when that key takes the one-by-one path (not a plain first
    /// attempt, or the statement failed: the one-by-one path then reports the failure).
    static func beginFirstAttempts(_ keys: [String], at now: Date, pool: PostgresPool) async -> [Loaded?] {
        var keyArray = PostgresArray(.text, capacity: keys.count * 40)
        var byKey: [String: Loaded] = [:]
        do {
            for key in keys { try keyArray.append(key) }
            for row in try await pool.query(SubscriptionSQL.shared.beginFirstAttempts, [.array(keyArray), .timestamptz(now)]).rows {
                let loaded = try Loaded(row: row)
                byKey[loaded.charge.idempotencyKey] = loaded
            }
        } catch {
            // A row that does not decode leaves its charge marked: the one-by-one path sees
            // `attempted_at` and looks the key up before sending, as after a crash.
            return keys.map { _ in nil }
        }
        return keys.map { byKey[$0] }
    }

    /// Settles `batch` through `settle`, for `BatchCombiner`. One element per success: true when
    /// settled, false when it was settled already, nil when the batch failed and the success
    /// must be settled alone.
    static func settleSuccesses(_ batch: [Success], pool: PostgresPool) async -> [Bool?] {
        guard let settled = try? await settle(batch, pool: pool) else { return batch.map { _ in nil } }
        return batch.map { settled.contains($0.chargeID) }
    }

    /// Settles `successes` in one transaction: the advisory locks of every payment and order (in
    /// the processor's sorted order), then one statement per kind.
    /// - Returns: the charges settled (those settled earlier are not).
    /// - Throws: `PostgresError`; nothing is settled then.
    static func settle(_ batch: [Success], pool: PostgresPool) async throws -> Set<Int64> {
        try await pool.transaction { connection in try await settle(batch, on: connection) }
    }

    /// `settle(_:pool:)` on `connection`, inside the caller's transaction.
    static func settle(_ batch: [Success], on connection: PostgresConnection) async throws -> Set<Int64> {
        func rows(_ successes: [Success]) -> String {
            JSONOutput.array(successes.map { success in
                var fields: [JSONOutput.Member] = [
                    .init("charge_id", .int(success.chargeID)), .init("provider", .string(success.provider)),
                    .init(success.asOrder ? "provider_order_id" : "provider_payment_id", .string(success.providerPaymentID)),
                    .init("provider_status", .string(success.providerStatus)), .init("status", .string(success.status)),
                ]
                if let reference = success.merchantReference { fields.append(.init("merchant_reference", .string(reference))) }
                return .object(fields)
            }).rendered
        }
        let payments = batch.filter { !$0.asOrder }
        let orders = batch.filter(\.asOrder)
        try await AdvisoryLockKey.lock(batch.map(\.lockKey), on: connection)
        var settled = Set<Int64>()
        if !payments.isEmpty {
            for row in try await connection.query(SubscriptionSQL.shared.settleSuccessesWithPayments, [.jsonb(rows(payments))]).rows {
                settled.insert(try row.decode("id"))
            }
        }
        if !orders.isEmpty {
            for row in try await connection.query(SubscriptionSQL.shared.settleSuccessesWithOrders, [.jsonb(rows(orders))]).rows {
                settled.insert(try row.decode("id"))
            }
        }
        return settled
    }
}
