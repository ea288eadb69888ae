import Foundation
import PayhookAdmin
import PayhookCore

/// How often a subscription is charged: every N days, weeks or months, in UTC.
///
/// Due dates are computed from the start and the cycle number, never from the previous due
/// date, so nothing drifts. Months keep the start's day of month as the anchor and clamp it to
/// shorter months:
///
/// ```swift
/// // Wrong: adding a month to the previous date loses the anchor for good.
/// // Jan 31 -> Feb 28 -> Mar 28 -> Apr 28 …
/// // Right: every date is start + n months, clamped.
/// // Jan 31 -> Feb 28 (29 in leap years) -> Mar 31 -> Apr 30 …
/// ```
/// The time of day of `start_at` is kept on every cycle.
package struct SubscriptionInterval: Sendable, Hashable {
    package enum Unit: String, Sendable, CaseIterable {
        case day, week, month
    }

    /// How many units between cycles; at least 1.
    package let every: Int
    package let unit: Unit

    /// Upper bounds that keep dates inside what PostgreSQL and `Date` represent sensibly.
    static let maximumEvery: [Unit: Int] = [.day: 3660, .week: 520, .month: 120]

    /// - Returns: nil when `every` is below 1 or above the unit's maximum.
    init?(every: Int, unit: Unit) {
        guard every >= 1, every <= Self.maximumEvery[unit] ?? 0 else { return nil }
        self.every = every
        self.unit = unit
    }

    /// The `subscriptions.interval` column: `{"every": 1, "unit": "month"}`.
    var json: JSONOutput {
        .object([.init("every", .int(Int64(every))), .init("unit", .string(unit.rawValue))])
    }

    /// As an operator reads it: `every month`, `every 2 weeks`.
    package var readable: String {
        every == 1 ? "every \(unit.rawValue)" : "every \(every) \(unit.rawValue)s"
    }

    /// Reads the stored column back: what ``json`` wrote, so `every` is an integer.
    static func parse(json text: String) -> SubscriptionInterval? {
        guard let object = JSONValue.parse(Array(text.utf8)),
              let every = object["every"]?.exactInteger.flatMap({ Int(exactly: $0) }),
              case .string(let unitText)? = object["unit"], let unit = Unit(rawValue: unitText)
        else { return nil }
        return SubscriptionInterval(every: every, unit: unit)
    }

    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()

    /// When cycle `cycle` (1 = the first, due at `start`) is due.
    func dueDate(cycle: Int, start: Date) -> Date {
        let steps = max(0, cycle - 1)
        switch unit {
        case .day: return start.addingTimeInterval(Double(steps * every) * 86_400)
        case .week: return start.addingTimeInterval(Double(steps * every) * 7 * 86_400)
        case .month: return Self.addingMonths(steps * every, to: start)
        }
    }

    /// The last cycle whose due date is at or before `date` (0 when even cycle 1 is later).
    /// Finds it arithmetically for days and weeks and by a short estimate-and-correct for months,
    /// so a subscription that missed years of cycles costs no loop over them.
    func lastCycle(dueAtOrBefore date: Date, start: Date) -> Int {
        guard date >= start else { return 0 }
        let elapsed = date.timeIntervalSince(start)
        switch unit {
        case .day, .week:
            let length = Double(every) * (unit == .day ? 86_400 : 7 * 86_400)
            var cycle = Int((elapsed / length).rounded(.down)) + 1
            while cycle > 1, dueDate(cycle: cycle, start: start) > date { cycle -= 1 }
            while dueDate(cycle: cycle + 1, start: start) <= date { cycle += 1 }
            return cycle
        case .month:
            let components = Self.utc.dateComponents([.month], from: start, to: date)
            var cycle = max(1, (components.month ?? 0) / every + 1)
            while cycle > 1, dueDate(cycle: cycle, start: start) > date { cycle -= 1 }
            while dueDate(cycle: cycle + 1, start: start) <= date { cycle += 1 }
            return cycle
        }
    }

    /// `start` plus `months`, with the start's day of month clamped to the target month's length
    /// and the time of day kept.
    static func addingMonths(_ months: Int, to start: Date) -> Date {
        let calendar = utc
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: start)
        let monthIndex = (parts.year ?? 1970) * 12 + ((parts.month ?? 1) - 1) + months
        let year = monthIndex / 12
        let month = monthIndex % 12 + 1
        var target = DateComponents()
        target.year = year
        target.month = month
        target.day = 1
        guard let firstOfMonth = calendar.date(from: target),
              let days = calendar.range(of: .day, in: .month, for: firstOfMonth)?.count
        else { return start }
        target.day = min(parts.day ?? 1, days)
        target.hour = parts.hour
        target.minute = parts.minute
        target.second = parts.second
        target.nanosecond = parts.nanosecond
        return calendar.date(from: target) ?? start
    }
}
