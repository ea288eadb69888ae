import Foundation
package import PayhookCore
import PayhookLedger
import PayhookPostgres

/// Payments and their adjustments.
extension CanonicalEventApplier {
    // MARK: Payments

    /// Merges one payment event into the payment `pass` holds (reading it first if the pass has
    /// not), records its adjustment, and leaves the payment's new state and the history row to
    /// the pass's writes.
    /// - Returns: the order the payment belongs to, if any.
    @discardableResult
    func applyPayment(_ snapshot: PaymentSnapshot, fetched: Bool, orderID: Int64?, source: EventSource,
                      note: String?, pass: inout ApplyPass, on connection: PostgresConnection) async throws -> Int64? {
        let provider = snapshot.provider.rawValue
        var resolvedOrderID = orderID
        if resolvedOrderID == nil, let providerOrderID = snapshot.providerOrderID {
            resolvedOrderID = try await ensureOrder(provider: provider, providerOrderID: providerOrderID,
                                                    account: source.account, on: connection)
        }
        if let token = snapshot.vaultToken { _ = try await applyToken(token, on: connection) }

        let adjustments = Self.adjustments(for: snapshot, fetched: fetched, source: source)
        let key = ApplyPass.PaymentKey(snapshot)
        var stored: ApplyPass.Payment?
        if let known = pass.payment(key) {
            stored = known
        } else {
            stored = try await selectPayment(provider: provider, id: snapshot.providerPaymentID, on: connection)
            pass.remember(stored, for: key)
        }
        var totals: AdjustmentTotals?
        if !adjustments.isEmpty {
            // Adjustments reference the payment's row, so it must exist now: written if the
            // pass holds it unwritten, or a placeholder when a refund arrives before its
            // authorisation (the pass then writes the merged state over it).
            var paymentID = try await pass.rowID(of: key, on: connection)
            if paymentID == nil {
                let rows = try await connection.query(LedgerSQL.shared.insertPlaceholderPayment,
                                                      [.text(provider), .text(snapshot.providerPaymentID)])
                paymentID = try rows.rows.first?.decode("id", as: Int64.self)
                if let paymentID {
                    var placeholder = PaymentState()
                    placeholder.status = .pending
                    pass.remember(ApplyPass.Payment(id: paymentID, state: placeholder), for: key)
                } else {
                    stored = try await selectPayment(provider: provider, id: snapshot.providerPaymentID, on: connection)
                    pass.remember(stored, for: key)
                    paymentID = stored?.id
                }
            }
            guard let paymentID else {
                throw PostgresError(kind: .serializationFailure, message: "payment row could not be created")
            }
            for adjustment in adjustments {
                try await record(adjustment, provider: provider, paymentID: paymentID, source: source, on: connection)
            }
            totals = try await adjustmentTotals(paymentID: paymentID, on: connection)
            if adjustments.contains(where: \.changesCaptures) {
                try await connection.query(LedgerSQL.shared.updateCapturedMinor, [.int(paymentID)])
            }
        }
        var current = stored?.state ?? PaymentState()
        if stored == nil { current.status = nil }
        let outcome = PaymentMerge.merge(current, with: snapshot, fetched: fetched, adjustments: totals)
        var next = outcome.state
        if next.orderID == nil { next.orderID = resolvedOrderID }
        // The account of the first delivery that wrote the payment, never the payload's word.
        next.account = stored?.state.account ?? (source.account.isEmpty ? nil : source.account)
        let status = next.status ?? .pending
        next.status = status
        if next != stored?.state || stored == nil {
            pass.change(key, to: next)
        }

        var data = EventData(provider: provider)
        data.providerPaymentID = snapshot.providerPaymentID
        data.providerOrderID = snapshot.providerOrderID
        data.providerStatus = snapshot.providerStatus
        data.statusDetail = snapshot.statusDetail
        data.reportedStatus = snapshot.status?.rawValue
        data.statusBefore = stored?.state.status?.rawValue
        data.statusAfter = status.rawValue
        data.amountMinor = snapshot.amount?.minorUnits
        data.currency = snapshot.amount?.currency ?? snapshot.modificationAmount?.currency
        data.modificationAmountMinor = snapshot.modificationAmount?.minorUnits
        data.merchantReference = snapshot.merchantReference
        data.fetched = fetched ? true : nil
        data.stale = outcome.stale ? true : nil
        data.note = note
        switch snapshot.refund {
        case .increment(let reference, let amount)?:
            data.refund = .init(kind: "increment", reference: reference, amountMinor: amount.minorUnits)
        case .failed(let reference)?:
            data.refund = .init(kind: "failed", reference: reference, amountMinor: nil)
        case .total(let amount)?:
            data.refund = .init(kind: "total", reference: nil, amountMinor: amount.minorUnits)
        case nil:
            break
        }
        pass.append(history(type: CanonicalEvent.payment(snapshot).type, payment: key, orderID: next.orderID,
                            tokenID: nil, occurredAt: snapshot.occurredAt, data: data, source: source))
        return next.orderID
    }

    func selectPayment(provider: String, id: String, on connection: PostgresConnection) async throws -> ApplyPass.Payment? {
        let rows = try await connection.query(ProcessingSQL.shared.selectPaymentForUpdate, [.text(provider), .text(id)])
        return try rows.rows.first.map(ApplyPass.Payment.init(row:))
    }

    /// What an event adds to `payment_adjustments`.
    package enum Adjustment: Equatable {
        case refund(reference: String, amount: Money)
        case refundFailed(reference: String)
        /// One capture and the amount it captured, keyed by the capture's own reference.
        case capture(reference: String, amount: Money)
        /// The capture under `reference` failed: a tombstone that keeps it out of the sum.
        case captureFailed(reference: String)
        case counted(kind: String, reference: String, amount: Money?)

        /// Whether recording it can change `payments.captured_minor`.
        var changesCaptures: Bool {
            switch self {
            case .capture, .captureFailed: true
            default: false
            }
        }
    }

    /// Webhook deltas only: fetched state reports totals and statuses, never increments.
    static func adjustments(for snapshot: PaymentSnapshot, fetched: Bool, source: EventSource) -> [Adjustment] {
        var adjustments: [Adjustment] = []
        switch snapshot.refund {
        case .increment(let reference, let amount)?: adjustments.append(.refund(reference: reference, amount: amount))
        case .failed(let reference)?: adjustments.append(.refundFailed(reference: reference))
        case .total?, nil: break
        }
        switch snapshot.capture {
        case .increment(let reference, let amount)?: adjustments.append(.capture(reference: reference, amount: amount))
        case .failed(let reference)?: adjustments.append(.captureFailed(reference: reference))
        case nil: break
        }
        guard !fetched else { return adjustments }
        // The provider's identity of the event when it gives one: the same item in a
        // differently composed batch is then the same adjustment.
        let reference = snapshot.eventReference ?? source.itemReference
        switch snapshot.transition {
        case .advance(.chargedBack):
            adjustments.append(.counted(kind: "chargeback", reference: reference, amount: snapshot.modificationAmount))
        case .chargebackReversed:
            adjustments.append(.counted(kind: "chargeback_reversal", reference: reference, amount: snapshot.modificationAmount))
        case .captureFailed:
            adjustments.append(.counted(kind: "capture_failure", reference: reference, amount: snapshot.modificationAmount))
        default:
            break
        }
        return adjustments
    }

    func record(_ adjustment: Adjustment, provider: String, paymentID: Int64, source: EventSource,
                on connection: PostgresConnection) async throws {
        // Refunds, captures and counted kinds are one insert that differs only in its kind; the
        // two failures are one update that differs only in its statement.
        let insert: (kind: String, reference: String, amount: Money?)
        switch adjustment {
        case .refund(let reference, let amount):
            insert = ("refund", reference, amount)
        case .capture(let reference, let amount):
            insert = ("capture", reference, amount)
        case .counted(let kind, let reference, let amount):
            insert = (kind, reference, amount)
        case .refundFailed(let reference):
            try await markFailed(ProcessingSQL.shared.markRefundFailed, provider: provider, reference: reference,
                                 paymentID: paymentID, source: source, on: connection)
            return
        case .captureFailed(let reference):
            try await markFailed(ProcessingSQL.shared.markCaptureFailed, provider: provider, reference: reference,
                                 paymentID: paymentID, source: source, on: connection)
            return
        }
        try await connection.query(ProcessingSQL.shared.insertAdjustment, [
            .text(provider), .text(insert.kind), .text(insert.reference), .int(paymentID), Self.int(insert.amount?.minorUnits),
            Self.text(insert.amount?.currency), .int(source.inboundEventID),
        ])
    }

    private func markFailed(_ statement: String, provider: String, reference: String, paymentID: Int64,
                            source: EventSource, on connection: PostgresConnection) async throws {
        try await connection.query(statement, [.text(provider), .text(reference), .int(paymentID), .int(source.inboundEventID)])
    }

    /// The payment's adjustment sums, read after this event's adjustments were recorded.
    func adjustmentTotals(paymentID: Int64, on connection: PostgresConnection) async throws -> AdjustmentTotals {
        let rows = try await connection.query(ProcessingSQL.shared.adjustmentTotals, [.int(paymentID)])
        guard let row = rows.rows.first else { return AdjustmentTotals() }
        return AdjustmentTotals(
            refundedMinor: try row.decode("refunded"), chargebacks: try row.decode("chargebacks"),
            chargebackReversals: try row.decode("reversals"), captureFailures: try row.decode("capture_failures"))
    }
}
