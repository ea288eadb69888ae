/// The precedence rule: the one place that decides whether a payment's status may change.
///
/// Providers deliver at least once and in any order, so a late `authorized` can arrive after
/// `captured`. Statuses are ranked; an incoming status replaces the stored one only when it
/// ranks strictly higher. Because the ranking is a total order, applying any permutation of
/// the same events ends on the same status (the highest one), which is what makes replays and
/// reordering converge.
///
/// | rank | status               | may replace                                  |
/// |-----:|----------------------|----------------------------------------------|
/// | 0    | `pending`            | nothing (only an empty status)               |
/// | 1    | `authorized`         | `pending`                                    |
/// | 2    | `expired`            | ranks 0–1                                    |
/// | 3    | `canceled`           | ranks 0–2                                    |
/// | 4    | `declined`           | ranks 0–3                                    |
/// | 5    | `failed`             | ranks 0–4                                    |
/// | 6    | `captured`           | ranks 0–5 (a failed attempt can be retried)  |
/// | 7    | `partially_refunded` | ranks 0–6                                    |
/// | 8    | `refunded`           | ranks 0–7                                    |
/// | 9    | `charged_back`       | everything else                              |
///
/// Consequences: `captured` is never undone by a late `authorized`/`pending`, nor by a
/// terminal failure (`declined`, `failed`, `expired`, `canceled`); refunds and chargebacks
/// follow `captured`; `partially_refunded` → `refunded` but never back. The terminal failures
/// are ordered among themselves only so that two conflicting reports converge; a payment
/// normally gets at most one of them.
///
/// Moving backwards needs an explicit ``StatusTransition`` (chargeback reversal, capture
/// failure, refund failure), applied by ``resolve(current:applying:refundedMinorUnits:amountMinorUnits:)``.
///
/// Wrong: `payment.status = incoming` (a late `pending` undoes a capture).
/// Right: `payment.status = PaymentStatus.resolve(current: payment.status, applying: event.transition, …)`.
extension PaymentStatus {
    /// Position in the precedence order; higher wins.
    public var precedenceRank: Int {
        switch self {
        case .pending: 0
        case .authorized: 1
        case .expired: 2
        case .canceled: 3
        case .declined: 4
        case .failed: 5
        case .captured: 6
        case .partiallyRefunded: 7
        case .refunded: 8
        case .chargedBack: 9
        }
    }

    /// Whether a reported status may replace the stored one.
    ///
    /// - Parameters:
    ///   - current: the stored status, `nil` when the payment is new.
    ///   - incoming: the status a provider event reports.
    /// - Returns: `true` when `current` is `nil` or `incoming` ranks strictly higher.
    public static func shouldReplace(current: PaymentStatus?, with incoming: PaymentStatus) -> Bool {
        guard let current else { return true }
        return incoming.precedenceRank > current.precedenceRank
    }

    /// The refund status implied by a refunded sum: `nil` for nothing refunded,
    /// `partially_refunded` below the amount, `refunded` at or above it.
    ///
    /// Refund increments (Adyen) only report `partially_refunded`; the applier sums the stored
    /// refunds, calls this with the payment's amount, and advances to the result.
    public static func refundStatus(refundedMinorUnits: Int64, amountMinorUnits: Int64?) -> PaymentStatus? {
        guard refundedMinorUnits > 0 else { return nil }
        guard let amountMinorUnits else { return .partiallyRefunded }
        return refundedMinorUnits >= amountMinorUnits ? .refunded : .partiallyRefunded
    }

    /// Applies one event's transition to the stored status.
    ///
    /// - Parameters:
    ///   - current: the stored status, `nil` when the payment is new.
    ///   - transition: what the event does (see ``StatusTransition``).
    ///   - refundedMinorUnits: refunds that remain after this event, summed by the applier;
    ///     used when a reversal lands back on a refund state.
    ///   - amountMinorUnits: the payment's amount, when known.
    /// - Returns: the new status; `nil` only when `current` is `nil` and the event implies none.
    public static func resolve(
        current: PaymentStatus?, applying transition: StatusTransition,
        refundedMinorUnits: Int64 = 0, amountMinorUnits: Int64? = nil
    ) -> PaymentStatus? {
        let afterRefunds = refundStatus(refundedMinorUnits: refundedMinorUnits, amountMinorUnits: amountMinorUnits)
        switch transition {
        case .advance(let incoming):
            return shouldReplace(current: current, with: incoming) ? incoming : current
        case .modificationRefused, .notice:
            return current
        case .chargebackReversed:
            // A reversal proves the money had been captured; it restores what the chargeback
            // hid, and never touches a payment that was not charged back and is past capture.
            switch current {
            case .chargedBack: return afterRefunds ?? .captured
            case nil, .pending?, .authorized?: return .captured
            case let other?: return other
            }
        case .captureFailed:
            switch current {
            case nil, .pending?, .authorized?, .captured?: return .failed
            case let other?: return shouldReplace(current: other, with: .failed) ? .failed : other
            }
        case .refundFailed:
            switch current {
            case .partiallyRefunded?, .refunded?: return afterRefunds ?? .captured
            default: return current
            }
        }
    }
}
