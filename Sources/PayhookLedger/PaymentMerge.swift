package import Foundation
package import PayhookCore

/// The mutable columns of one `payments` row, as the applier reads and writes them.
package struct PaymentState: Sendable, Equatable {
    /// `nil` only for a row created by this event that no status has been decided for yet.
    package var status: PaymentStatus?
    package var amountMinor: Int64?
    package var currency: String?
    package var refundedMinor: Int64 = 0
    package var chargebacks: Int = 0
    package var chargebackReversals: Int = 0
    package var captureFailures: Int = 0
    package var statusDetail: String?
    package var method: String?
    package var funding: String?
    package var merchantReference: String?
    package var account: String?
    package var orderID: Int64?
    package var providerUpdatedAt: Date?

    package init() {}
}

/// Sums over a payment's `payment_adjustments` rows (refund increments, disputes, capture
/// failures), read after this event's adjustment was recorded.
package struct AdjustmentTotals: Sendable, Equatable {
    package var refundedMinor: Int64 = 0
    package var chargebacks: Int = 0
    package var chargebackReversals: Int = 0
    package var captureFailures: Int = 0

    package init(refundedMinor: Int64 = 0, chargebacks: Int = 0, chargebackReversals: Int = 0, captureFailures: Int = 0) {
        self.refundedMinor = refundedMinor
        self.chargebacks = chargebacks
        self.chargebackReversals = chargebackReversals
        self.captureFailures = captureFailures
    }
}

/// Merges one ``PaymentSnapshot`` into a stored payment: the applier's decisions, with no I/O.
///
/// Why a pure function: convergence under reordering is the property that matters, and it is
/// proved by folding every permutation of an event sequence through this merge (unit tests)
/// as well as through PostgreSQL (integration tests).
///
/// Rules, in order:
/// 1. Fetched state (Mercado Pago, PXP) older than the stored `provider_updated_at` is
///    refused whole: it is history only (`stale`). Webhook events (Adyen) are deltas, never
///    refused by time: a late CAPTURE still happened.
/// 2. Refund increments and failures (Adyen) do not report a status themselves; the refund
///    status follows from the summed `payment_adjustments` and the amount
///    (``PaymentStatus/refundStatus(refundedMinorUnits:amountMinorUnits:)``), re-decided on
///    every event because the amount may arrive after the refunds. Refund totals (fetched
///    state) replace the stored total when the snapshot is newer, and otherwise only raise it.
/// 3. The event's transition goes through ``PaymentStatus/resolve(current:applying:refundedMinorUnits:amountMinorUnits:)``.
/// 4. Counts decide disputes and capture failures whatever order they came in: more
///    chargebacks than reversals is `charged_back`; a `charged_back` status with every
///    chargeback reversed goes back to the refund status or `captured`; a recorded capture
///    failure turns `captured` into `failed`. (The core rule alone would let a reversal that
///    arrives before its chargeback be undone by it.)
package enum PaymentMerge {
    /// The result of a merge.
    package struct Outcome: Sendable, Equatable {
        package var state: PaymentState
        /// The snapshot was older fetched state and changed nothing.
        package var stale: Bool
    }

    /// - Parameters:
    ///   - current: the stored row (`status == nil` for a row this event creates).
    ///   - snapshot: what the event says.
    ///   - fetched: the snapshot is fetched state (a total, guarded by time) rather than a
    ///     webhook delta.
    ///   - adjustments: the payment's adjustment sums after this event's adjustment, when the
    ///     event recorded one; `nil` keeps the stored sums.
    package static func merge(
        _ current: PaymentState, with snapshot: PaymentSnapshot, fetched: Bool, adjustments: AdjustmentTotals?
    ) -> Outcome {
        if fetched, let stored = current.providerUpdatedAt, let incoming = snapshot.occurredAt, incoming < stored,
           current.status != nil {
            return Outcome(state: current, stale: true)
        }
        var next = current
        let newer: Bool = {
            guard let stored = current.providerUpdatedAt, let incoming = snapshot.occurredAt else { return false }
            return incoming > stored
        }()

        if let amount = snapshot.amount {
            // AUTHORISATION_ADJUSTMENT replaces the authorised amount; a late AUTHORISATION
            // never overwrites what an adjustment set.
            if next.amountMinor == nil || fetched || snapshot.replacesAmount {
                next.amountMinor = amount.minorUnits
                next.currency = amount.currency
            }
        } else if next.currency == nil, let modification = snapshot.modificationAmount {
            next.currency = modification.currency
        }
        if let adjustments {
            next.refundedMinor = adjustments.refundedMinor
            next.chargebacks = adjustments.chargebacks
            next.chargebackReversals = adjustments.chargebackReversals
            next.captureFailures = adjustments.captureFailures
        }
        var transition = snapshot.transition
        switch snapshot.refund {
        case .total(let total)?:
            next.refundedMinor = newer ? total.minorUnits : max(next.refundedMinor, total.minorUnits)
        case .increment?:
            // The reported `partially_refunded` is only a floor; the sum decides below.
            transition = .modificationRefused
        case .failed?, nil:
            break
        }

        var status = PaymentStatus.resolve(
            current: current.status, applying: transition,
            refundedMinorUnits: next.refundedMinor, amountMinorUnits: next.amountMinor)
        let refundStatus = PaymentStatus.refundStatus(
            refundedMinorUnits: next.refundedMinor, amountMinorUnits: next.amountMinor)
        if let refundStatus, PaymentStatus.shouldReplace(current: status, with: refundStatus) {
            status = refundStatus
        }
        if next.chargebacks > next.chargebackReversals {
            status = .chargedBack
        } else if next.chargebacks > 0, status == .chargedBack {
            status = refundStatus ?? .captured
        }
        if next.captureFailures > 0, status == .captured {
            status = .failed
        }
        next.status = status

        // The detail belongs to the status that won; a late `pending` must not relabel a capture.
        if let reported = snapshot.status, reported == status || current.status == nil {
            next.statusDetail = snapshot.statusDetail ?? next.statusDetail
        } else if snapshot.status == nil, status != current.status {
            next.statusDetail = snapshot.statusDetail ?? next.statusDetail
        }
        // Only fetched state may replace method and funding, when it is newer: a webhook delta's
        // date is not signed (Adyen `eventDate`), so a replayed item with a later date must not
        // change what the funding gate reads; the first report stands.
        let replaces = newer && fetched
        next.method = replaces ? (snapshot.method ?? next.method) : (next.method ?? snapshot.method)
        next.funding = replaces ? (snapshot.funding ?? next.funding) : (next.funding ?? snapshot.funding)
        next.merchantReference = next.merchantReference ?? snapshot.merchantReference
        next.account = next.account ?? snapshot.account
        if let incoming = snapshot.occurredAt {
            next.providerUpdatedAt = max(next.providerUpdatedAt ?? incoming, incoming)
        }
        return Outcome(state: next, stale: false)
    }
}

/// Token status when two reports disagree: the later one wins when both are dated, otherwise
/// the more final one (`active` < `expired` < `disabled`), so any order converges.
package enum VaultTokenMerge {
    package static func rank(_ status: VaultTokenStatus) -> Int {
        switch status {
        case .active: 0
        case .expired: 1
        case .disabled: 2
        }
    }

    /// Whether the incoming snapshot's status and details replace the stored ones.
    package static func incomingWins(
        stored: VaultTokenStatus, storedAt: Date?, incoming: VaultTokenStatus, incomingAt: Date?
    ) -> Bool {
        if let storedAt, let incomingAt, storedAt != incomingAt { return incomingAt > storedAt }
        return rank(incoming) >= rank(stored)
    }
}
