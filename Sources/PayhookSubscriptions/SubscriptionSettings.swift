import Foundation
public import PayhookCore

/// How recurring charging behaves; parsed from the environment (`Configuration.subscriptions`).
public struct SubscriptionSettings: Sendable, Equatable {
    /// What a scheduler that was down (or a clock that jumped) does with cycles that fell due
    /// meanwhile (`PAYHOOK_SCHEDULER_CATCH_UP`).
    public enum CatchUp: String, Sendable, CaseIterable {
        /// Charge every missed cycle, each once.
        case all
        /// Charge only the latest due cycle; the earlier missed ones are skipped.
        case latest
    }

    public var catchUp: CatchUp = .all
    /// Waits before each dunning retry after a soft decline; attempt 2 waits the first entry,
    /// and so on. Empty: a soft decline makes the subscription past due at once
    /// (`PAYHOOK_DUNNING_SCHEDULE`, default `1d,3d,5d`).
    public var dunningSchedule: [Duration] = [.seconds(86_400), .seconds(3 * 86_400), .seconds(5 * 86_400)]
    /// How often the scheduler looks for due subscriptions (`PAYHOOK_SCHEDULER_INTERVAL_SECONDS`).
    public var schedulerInterval: Duration = .seconds(30)
    /// Subscriptions claimed per scheduler transaction (`PAYHOOK_SCHEDULER_BATCH`).
    public var schedulerBatchSize: Int = 200
    /// How long a pending charge waits before it is looked up again
    /// (`PAYHOOK_CHARGE_PENDING_RECHECK_SECONDS`).
    public var pendingRecheck: Duration = .seconds(900)
    /// Look-ups of a pending charge before it is handed to an operator (dead letter)
    /// (`PAYHOOK_CHARGE_PENDING_CHECKS`).
    public var maxPendingChecks: Int = 96
    /// Attempts of one `charge_recurring` job (same idempotency key on every one) before it is
    /// dead-lettered (`PAYHOOK_CHARGE_MAX_ATTEMPTS`).
    public var chargeMaxAttempts: Int = 20
    /// Charges in flight per process (`PAYHOOK_CHARGE_CONCURRENCY`).
    public var chargeConcurrency: Int = 32
    /// How long each provider keeps an idempotency key (`PAYHOOK_<PROVIDER>_IDEMPOTENCY_WINDOW`).
    /// Why it matters: a resend with a key the provider has forgotten is a new payment, so once a
    /// charge's first attempt is older than this, payhook never sends that key again; the charge
    /// is settled by the provider's webhook, a lookup, or an operator (`charges resolve`).
    public var idempotencyWindows: [ProviderID: Duration] = [
        .adyen: .seconds(7 * 86_400), .mercadopago: .seconds(86_400), .pxp: .seconds(86_400),
    ]
    /// Cycles one subscription may be charged for in one scheduler pass after downtime
    /// (`PAYHOOK_SCHEDULER_MAX_CATCH_UP`); older missed cycles are skipped and reported.
    public var maxCatchUp: Int = 3

    public init() {}

    /// The idempotency window of `provider` (an unknown provider gets the shortest configured).
    public func idempotencyWindow(_ provider: String) -> Duration {
        ProviderID(rawValue: provider).flatMap { idempotencyWindows[$0] } ?? idempotencyWindows.values.min() ?? .seconds(86_400)
    }

    /// Parses `PAYHOOK_DUNNING_SCHEDULE`: comma-separated waits such as `1d,3d,5d`, `12h`,
    /// `30m`, `45s`; `none` for no retries. At most 20 entries, each from 1 s to 366 days.
    /// - Returns: the waits, or a message saying what is wrong.
    package static func parseDunningSchedule(_ text: String) -> Result<[Duration], ScheduleProblem> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased() == "none" { return .success([]) }
        var waits: [Duration] = []
        for part in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            switch parseDuration(String(part)) {
            case .success(let wait): waits.append(wait)
            case .failure(let problem): return .failure(problem)
            }
        }
        guard waits.count <= 20 else { return .failure(ScheduleProblem(message: "at most 20 retries")) }
        return .success(waits)
    }

    /// Parses one duration as the dunning schedule writes them: a number and a unit, `7d`,
    /// `24h`, `30m`, `45s`; from 1 s to 366 days.
    package static func parseDuration(_ text: String) -> Result<Duration, ScheduleProblem> {
        let item = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let unit = item.last, let number = Int64(item.dropLast()), number > 0 else {
            return .failure(ScheduleProblem(message: "each entry is a number and a unit (d, h, m, s), e.g. 1d,3d,5d; or none"))
        }
        let seconds: Int64
        switch unit {
        case "d": seconds = number.multipliedReportingOverflow(by: 86_400).partialValue
        case "h": seconds = number.multipliedReportingOverflow(by: 3_600).partialValue
        case "m": seconds = number.multipliedReportingOverflow(by: 60).partialValue
        case "s": seconds = number
        default:
            return .failure(ScheduleProblem(message: "unknown unit in \(item); use d, h, m or s"))
        }
        guard seconds > 0, seconds <= 366 * 86_400 else {
            return .failure(ScheduleProblem(message: "each wait must be from 1s to 366d"))
        }
        return .success(.seconds(seconds))
    }

    package struct ScheduleProblem: Error, Equatable {
        package let message: String
    }
}
