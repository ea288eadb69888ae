import Foundation
import PayhookCore
import PayhookLedger
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import Synchronization

/// One batch: the claim, the fetch lease and the batch transaction.
extension InboundEventProcessor {
    // MARK: One batch

    /// Claims and processes one batch; returns what it did.
    /// - Throws: a `PostgresError` when the batch as a whole failed (its rows stay pending).
    @discardableResult
    func processBatch() async throws -> BatchOutcome {
        var claimedIDs: [ClaimedInboundEvent] = []
        var leased: FetchLease?
        let started = ContinuousClock.now
        do {
            var outcome = try await pool.withConnection { connection in
                try await connection.transaction { connection in
                    try await self.processBatch(on: connection, claimed: { claimedIDs = $0 }, leased: { leased = $0 })
                }
            }
            if let leased {
                // The claim is committed; from here a failure of the batch is the apply's.
                claimedIDs = []
                let applied = try await applyLeased(leased) { claimedIDs = $0 }
                outcome.processed += applied.processed
                outcome.retried += applied.retried
                outcome.dead += applied.dead
            }
            metrics?.record(outcome, duration: ContinuousClock.now - started)
            return outcome
        } catch {
            if !claimedIDs.isEmpty {
                await recordBatchFailure(claimedIDs, error: error)
            }
            metrics?.batchFailures.increment()
            throw error
        }
    }

    /// Events claimed for a provider fetch outside the transaction: `token` is the
    /// `next_attempt_at` the claim wrote, which the apply checks is still there.
    struct FetchLease: Sendable {
        let events: [ClaimedInboundEvent]
        let token: Date
    }

    /// Whether interpreting the event may call a provider API (thin or to-be-confirmed webhooks).
    private static func needsFetch(_ event: ClaimedInboundEvent) -> Bool {
        !(event.provider == .adyen || event.provider == nil)
    }

    /// Claims a batch; applies the events that need no fetch in this transaction, and leases
    /// the others (handed to `leased`) for ``applyLeased(_:claimed:)`` after the commit, so that
    /// no transaction stays open across a provider call.
    private func processBatch(on connection: PostgresConnection,
                              claimed report: ([ClaimedInboundEvent]) -> Void,
                              leased: (FetchLease) -> Void) async throws -> BatchOutcome {
        let claimNow = now()
        let rows = try await connection.query(ProcessingSQL.shared.claimDue, [.timestamptz(claimNow), .int(Int64(settings.batchSize))])
        var claimed: [ClaimedInboundEvent] = []
        claimed.reserveCapacity(rows.rows.count)
        for row in rows {
            let providerText: String = try row.decode("provider")
            claimed.append(ClaimedInboundEvent(
                id: try row.decode("id"), provider: ProviderID(rawValue: providerText), providerText: providerText,
                account: try row.decode("account"), body: try row.decode("body"), attempts: try row.decode("attempts"),
                receivedAt: try row.decode("received_at")))
        }
        report(claimed)
        let outcome = BatchOutcome(claimed: claimed.count)
        guard !claimed.isEmpty else { return outcome }

        let remote = claimed.filter(Self.needsFetch)
        if !remote.isEmpty {
            let token = claimNow.addingTimeInterval(settings.fetchLease.seconds)
            try await connection.query(ProcessingSQL.shared.leaseForFetch, [.integerArray(remote.map(\.id)), .timestamptz(token)])
            leased(FetchLease(events: remote, token: token))
        }
        let local = remote.isEmpty ? claimed : claimed.filter { !Self.needsFetch($0) }
        return try await apply(local, await interpretAll(local), outcome: outcome, on: connection)
    }

    /// Fetches the leased events' provider state with no transaction open, then applies them
    /// in one transaction, skipping any whose lease ran out and was taken by another processor.
    private func applyLeased(_ lease: FetchLease,
                             claimed report: ([ClaimedInboundEvent]) -> Void) async throws -> BatchOutcome {
        let plans = await interpretAll(lease.events)
        return try await pool.withConnection { connection in
            try await connection.transaction { connection in
                let rows = try await connection.query(ProcessingSQL.shared.reclaimLeased, [
                    .integerArray(lease.events.map(\.id)), .timestamptz(lease.token),
                ])
                let kept = Set(try rows.map { try $0.decode("id", as: Int64.self) })
                var events: [ClaimedInboundEvent] = []
                var keptPlans: [Result<[ApplicableEvent], ProcessingFailure>] = []
                for (event, plan) in zip(lease.events, plans) where kept.contains(event.id) {
                    events.append(event)
                    keptPlans.append(plan)
                }
                report(events)
                guard !events.isEmpty else { return BatchOutcome() }
                return try await self.apply(events, keptPlans, outcome: BatchOutcome(), on: connection)
            }
        }
    }

    /// Locks, applies and records the outcome of claimed events whose plans are known, in the
    /// caller's transaction.
    private func apply(_ claimed: [ClaimedInboundEvent], _ plans: [Result<[ApplicableEvent], ProcessingFailure>],
                       outcome: BatchOutcome, on connection: PostgresConnection) async throws -> BatchOutcome {
        var outcome = outcome
        guard !claimed.isEmpty else { return outcome }
        var keys: [AdvisoryLockKey] = []
        for plan in plans {
            if case .success(let events) = plan { keys += CanonicalEventApplier.lockKeys(for: events) }
        }
        if !keys.isEmpty {
            try await AdvisoryLockKey.lock(keys, on: connection)
        }

        let failedAt = now()
        if let applied = try await applyAllOrNothing(claimed, plans, on: connection) {
            outcome.processed = applied.processed.count
            for (event, plan) in zip(claimed, plans) {
                guard case .failure(let failure) = plan else { continue }
                if try await recordFailure(event, failure, at: failedAt, on: connection) { outcome.dead += 1 } else { outcome.retried += 1 }
            }
            outcome.overpayments = try await finish(applied.processed, applied.touched, on: connection)
            return outcome
        }

        var processed: [Int64] = []
        var touched = TouchedRows()
        // Releasing one event's savepoint and opening the next one's share a round trip.
        var savepointOpen = false
        for (event, plan) in zip(claimed, plans) {
            switch plan {
            case .success(let events):
                if !savepointOpen {
                    try await connection.execute("SAVEPOINT inbound_event")
                    savepointOpen = true
                }
                do {
                    var pass = ApplyPass()
                    var rows = try await applier.apply(events, inboundEventID: event.id, account: event.account,
                                                       receivedAt: event.receivedAt, pass: &pass, on: connection)
                    try await pass.write(into: &rows, on: connection)
                    try await connection.execute("RELEASE SAVEPOINT inbound_event; SAVEPOINT inbound_event")
                    processed.append(event.id)
                    touched.merge(rows)
                } catch {
                    try await connection.execute("ROLLBACK TO SAVEPOINT inbound_event; RELEASE SAVEPOINT inbound_event")
                    savepointOpen = false
                    let failure = (error as? ProcessingFailure) ?? .database(error)
                    if try await recordFailure(event, failure, at: failedAt, on: connection) { outcome.dead += 1 } else { outcome.retried += 1 }
                }
            case .failure(let failure):
                if try await recordFailure(event, failure, at: failedAt, on: connection) { outcome.dead += 1 } else { outcome.retried += 1 }
            }
        }
        if savepointOpen { try await connection.execute("RELEASE SAVEPOINT inbound_event") }
        outcome.overpayments = try await finish(processed, touched, on: connection)
        outcome.processed = processed.count
        return outcome
    }

    /// The common case in one pass: every decodable event applied behind one savepoint for the
    /// batch instead of one per event, a round trip per event fewer (bench/normalize), with
    /// the batch's payments read in one statement and its payment and history rows written in
    /// three (``ApplyPass``). When any event fails, everything this pass wrote is rolled back to
    /// that savepoint (the rows claimed and the advisory locks, taken before it, stay held)
    /// and `nil` tells the caller to apply event by event, each behind its own savepoint, so
    /// that the failing one is rolled back alone, exactly as if this pass had not run.
    private func applyAllOrNothing(_ claimed: [ClaimedInboundEvent],
                                   _ plans: [Result<[ApplicableEvent], ProcessingFailure>],
                                   on connection: PostgresConnection) async throws
        -> (processed: [Int64], touched: TouchedRows)?
    {
        guard plans.contains(where: { if case .success = $0 { true } else { false } }) else { return nil }
        try await connection.execute("SAVEPOINT inbound_batch")
        var processed: [Int64] = []
        var touched = TouchedRows()
        var pass = ApplyPass()
        do {
            try await pass.readPayments(named: plans.flatMap { (try? $0.get()) ?? [] }, on: connection)
            for (event, plan) in zip(claimed, plans) {
                guard case .success(let events) = plan else { continue }
                touched.merge(try await applier.apply(events, inboundEventID: event.id, account: event.account,
                                                      receivedAt: event.receivedAt, pass: &pass, on: connection))
                processed.append(event.id)
            }
            try await pass.write(into: &touched, on: connection)
        } catch {
            try await connection.execute("ROLLBACK TO SAVEPOINT inbound_batch; RELEASE SAVEPOINT inbound_batch")
            return nil
        }
        try await connection.execute("RELEASE SAVEPOINT inbound_batch")
        return (processed, touched)
    }

    /// The batch's follow-ups (the hooks: fulfillment, charge settlement) and marking its events processed.
    /// - Returns: the overpayments newly reported (``BatchOutcome/overpayments``).
    private func finish(_ processed: [Int64], _ touched: TouchedRows,
                        on connection: PostgresConnection) async throws -> Int {
        guard !processed.isEmpty else { return 0 }
        let report = try await hooks.afterBatch(touched, connection)
        try await connection.query(ProcessingSQL.shared.markProcessed, [.integerArray(processed)])
        return report.overpayments
    }

    /// Decodes every claimed event and runs the provider fetches, a bounded number at once.
    private func interpretAll(_ claimed: [ClaimedInboundEvent]) async -> [Result<[ApplicableEvent], ProcessingFailure>] {
        // Adyen events need no fetch; decoding them inline avoids a task per event.
        var results = [Result<[ApplicableEvent], ProcessingFailure>?](repeating: nil, count: claimed.count)
        var remote: [Int] = []
        for (index, event) in claimed.enumerated() {
            if event.provider == .adyen || event.provider == nil {
                results[index] = await interpreter.interpret(event)
            } else {
                remote.append(index)
            }
        }
        if !remote.isEmpty {
            let interpreter = self.interpreter
            let limit = max(1, settings.maxConcurrentFetches)
            await withTaskGroup(of: (Int, Result<[ApplicableEvent], ProcessingFailure>).self) { group in
                var next = 0
                func add() {
                    let index = remote[next]
                    let event = claimed[index]
                    group.addTask { (index, await interpreter.interpret(event)) }
                    next += 1
                }
                while next < remote.count, next < limit { add() }
                for await (index, result) in group {
                    results[index] = result
                    if next < remote.count { add() }
                }
            }
        }
        return results.map { $0 ?? .failure(ProcessingFailure(retryable: true, reason: .maxAttemptsExceeded, message: "event was not interpreted")) }
    }
}
