import Foundation
import PayhookAdmin
import PayhookPostgres

/// The span the charts cover: a closed set, so the query parameter can only pick one of these.
enum ConsoleWindow: String, CaseIterable, Sendable {
    case hour = "1h"
    case day = "24h"
    case week = "7d"

    /// `?window=` absent means the last 24 hours; anything outside the set is refused.
    static func parse(_ text: String?) throws(OperationsError) -> ConsoleWindow {
        guard let text, !text.isEmpty else { return .day }
        guard let window = ConsoleWindow(rawValue: text) else { throw .invalid("window", "window must be 1h, 24h or 7d") }
        return window
    }

    var seconds: Int64 {
        switch self {
        case .hour: 3600
        case .day: 86_400
        case .week: 7 * 86_400
        }
    }

    /// Twelve, twenty-four or twenty-eight intervals: enough to see a trend, few enough to read.
    var intervalSeconds: Int64 {
        switch self {
        case .hour: 300
        case .day: 3600
        case .week: 6 * 3600
        }
    }

    var title: String {
        switch self {
        case .hour: "last hour"
        case .day: "last 24 hours"
        case .week: "last 7 days"
        }
    }

    var perInterval: String {
        switch self {
        case .hour: "per 5 minutes"
        case .day: "per hour"
        case .week: "per 6 hours"
        }
    }

    /// The window ending at the end of the interval `now` is in, so the newest bar is the
    /// current (still filling) interval and every bar covers whole clock intervals.
    func range(now: Date) -> (start: Date, end: Date) {
        let step = Double(intervalSeconds)
        let end = (now.timeIntervalSince1970 / step).rounded(.down) * step + step
        return (Date(timeIntervalSince1970: end - Double(seconds)), Date(timeIntervalSince1970: end))
    }

    var intervalCount: Int { Int(seconds / intervalSeconds) }

    /// An interval's start in UTC: `14:05`, `14:00`, or `12-05 18:00` over a week.
    func label(_ start: Date) -> String {
        ConsoleWindow.label(start, withDay: self == .week)
    }

    static func label(_ start: Date, withDay: Bool) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.month, .day, .hour, .minute], from: start)
        let time = String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
        return withDay ? String(format: "%02d-%02d ", parts.month ?? 0, parts.day ?? 0) + time : time
    }
}

extension ConsoleReads {
    /// Per-interval figures for the charts, over all providers or one provider (and account).
    struct Timeline: Sendable {
        struct Deliveries: Sendable {
            var accepted: [Double]
            /// Acknowledged and stored once (ingress's counts per five minutes).
            var duplicate: [Double]
            var refused: [Double]

            init(count: Int) {
                accepted = Array(repeating: 0, count: count)
                duplicate = accepted
                refused = accepted
            }
        }
        struct Lag: Sendable {
            var p50: [Double?]
            var p99: [Double?]
        }

        let window: ConsoleWindow
        let start: Date
        let labels: [String]
        /// By provider; accounts summed.
        var deliveries: [String: Deliveries] = [:]
        /// Accounts that received or refused deliveries in the window, by provider.
        var accounts: [String: Set<String>] = [:]
        var lag: [String: Lag] = [:]
        var lettersOpened: [Double]
        var lettersResolved: [Double]
        var reviews: [Double]
        var fulfilled: [Double]
        /// The last seven UTC days, oldest first, and charge attempts by outcome on each.
        let chargeDays: [String]
        var charges: [String: [Double]] = [:]
    }

    /// The charts' figures for `window` ending now; `provider` and `account` narrow them.
    func timeline(_ window: ConsoleWindow, provider: String? = nil, account: String? = nil,
                  now: Date = Date()) async throws(OperationsError) -> Timeline {
        let (start, end) = window.range(now: now)
        let count = window.intervalCount
        let labels = (0..<count).map { window.label(start.addingTimeInterval(Double(Int64($0) * window.intervalSeconds))) }
        let dayStart = floor(now.timeIntervalSince1970 / 86_400) * 86_400 - 6 * 86_400
        let days = (0..<7).map { ConsoleWindow.label(Date(timeIntervalSince1970: dayStart + Double($0) * 86_400), withDay: true)
            .split(separator: " ").first.map(String.init) ?? "" }
        var timeline = Timeline(window: window, start: start, labels: labels,
                                lettersOpened: Array(repeating: 0, count: count), lettersResolved: Array(repeating: 0, count: count),
                                reviews: Array(repeating: 0, count: count), fulfilled: Array(repeating: 0, count: count),
                                chargeDays: days)
        let binds: [PostgresValue] = [.timestamptz(start), .timestamptz(end), .int(window.intervalSeconds),
                                      provider.map { .text($0) } ?? .null, account.map { .text($0) } ?? .null]
        let providerBinds = Array(binds.prefix(4))
        let dayBinds: [PostgresValue] = [.timestamptz(Date(timeIntervalSince1970: dayStart)),
                                         .timestamptz(Date(timeIntervalSince1970: dayStart + 7 * 86_400)), .int(86_400), binds[3]]
        func slot(_ row: PostgresRow, limit: Int) throws -> Int? {
            let bucket: Int64 = try row.decode("bucket")
            return bucket >= 0 && bucket < Int64(limit) ? Int(bucket) : nil
        }
        do {
            try await pool.withConnection { connection in
                // Deliveries come from the hourly rollup for the hours it holds and from
                // inbound_events for the rest (the newest hours, any still settling, and any
                // the maintenance ticker has not rolled up yet). Reads only (`ConsoleRollUp` writes).
                let split = window.intervalSeconds >= 3600
                    ? try await Self.rolledSplit(start: start, end: end, now: now, on: connection) : RollUpSplit(rolled: [], raw: [(start, end)])
                var deliveryRows: [PostgresRow] = []
                if !split.rolled.isEmpty {
                    // Exactly the hours found rolled, so an hour another process rolls meanwhile
                    // is read once, from inbound_events.
                    var hours = PostgresArray(.timestamptz, capacity: split.rolled.count * 12)
                    for hour in split.rolled { try hours.append(hour) }
                    deliveryRows += try await connection.query(ConsoleChartSQL.shared.rolledDeliveries, binds + [.array(hours)]).rows
                }
                for (from, to) in split.raw {
                    deliveryRows += try await connection.query(ConsoleChartSQL.shared.deliveries,
                                                               binds + [.timestamptz(from), .timestamptz(to)]).rows
                }
                // Lag histograms by provider and interval: step -> deliveries.
                var histograms: [String: [[Int64: Int64]]] = [:]
                for row in deliveryRows {
                    let name: String = try row.decode("provider")
                    timeline.accounts[name, default: []].insert(try row.decode("account"))
                    guard let index = try slot(row, limit: count) else { continue }
                    let n: Int64 = try row.decode("n")
                    timeline.deliveries[name, default: .init(count: count)].accepted[index] += Double(n)
                    if let step: Int64 = try row.decode("lag_step") {
                        histograms[name, default: Array(repeating: [:], count: count)][index][step, default: 0] += n
                    }
                }
                for row in try await connection.query(ConsoleChartSQL.shared.refusals, binds).rows {
                    let name: String = try row.decode("provider")
                    timeline.accounts[name, default: []].insert(try row.decode("account"))
                    guard let index = try slot(row, limit: count) else { continue }
                    timeline.deliveries[name, default: .init(count: count)].refused[index] += Double(try row.decode("n") as Int64)
                }
                for row in try await connection.query(ConsoleChartSQL.shared.duplicates, binds).rows {
                    let name: String = try row.decode("provider")
                    timeline.accounts[name, default: []].insert(try row.decode("account"))
                    guard let index = try slot(row, limit: count) else { continue }
                    timeline.deliveries[name, default: .init(count: count)].duplicate[index] += Double(try row.decode("n") as Int64)
                }
                for (name, intervals) in histograms {
                    timeline.lag[name] = .init(p50: intervals.map { ConsoleReads.lagPercentile(0.5, of: $0) },
                                               p99: intervals.map { ConsoleReads.lagPercentile(0.99, of: $0) })
                }
                for row in try await connection.query(ConsoleChartSQL.shared.deadLetters, providerBinds).rows {
                    guard let index = try slot(row, limit: count) else { continue }
                    timeline.lettersOpened[index] = Double(try row.decode("opened") as Int64)
                    timeline.lettersResolved[index] = Double(try row.decode("resolved") as Int64)
                    timeline.reviews[index] = Double(try row.decode("reviews") as Int64)
                }
                for row in try await connection.query(ConsoleChartSQL.shared.fulfillments, binds).rows {
                    guard let index = try slot(row, limit: count) else { continue }
                    timeline.fulfilled[index] = Double(try row.decode("fulfilled") as Int64)
                }
                for row in try await connection.query(ConsoleChartSQL.shared.charges, dayBinds).rows {
                    guard let index = try slot(row, limit: 7) else { continue }
                    let status: String = try row.decode("status")
                    timeline.charges[status, default: Array(repeating: 0, count: 7)][index] = Double(try row.decode("n") as Int64)
                }
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
        return timeline
    }

    /// How long after an hour ends its deliveries may still be committing (a group commit's
    /// `received_at` is its transaction's start) before the hour is rolled up.
    static let rollUpGrace: TimeInterval = 300

    /// Which hours of a window the rollup holds, and which ranges `inbound_events` must answer.
    struct RollUpSplit {
        let rolled: [Date]
        let raw: [(Date, Date)]
    }

    /// Where the closed hours before `end` stop: an hour is closed once it ended `rollUpGrace` ago.
    static func closedEnd(end: Date, now: Date) -> Date {
        min(end, Date(timeIntervalSince1970: floor((now.timeIntervalSince1970 - rollUpGrace) / 3600) * 3600))
    }

    /// Which hours of [`start`, `end`) the rollup holds, and the ranges whose deliveries must be
    /// read from `inbound_events`: hours not rolled up (still settling, or not reached by the
    /// ticker yet) and the hours not closed yet, oldest first, adjacent hours merged. Writes nothing.
    static func rolledSplit(start: Date, end: Date, now: Date, on connection: PostgresConnection) async throws -> RollUpSplit {
        let closedEnd = closedEnd(end: end, now: now)
        guard closedEnd > start else { return RollUpSplit(rolled: [], raw: [(start, end)]) }
        let done = try await rolledHours(start: start, closedEnd: closedEnd, on: connection)
        let hours = stride(from: start.timeIntervalSince1970, to: closedEnd.timeIntervalSince1970, by: 3600)
            .map { Date(timeIntervalSince1970: $0) }
        let open = hours.filter { !done.contains($0) } + stride(from: closedEnd.timeIntervalSince1970, to: end.timeIntervalSince1970, by: 3600)
            .map { Date(timeIntervalSince1970: $0) }
        return RollUpSplit(rolled: hours.filter { done.contains($0) }, raw: ranges(open))
    }

    private static func rolledHours(start: Date, closedEnd: Date, on connection: PostgresConnection) async throws -> Set<Date> {
        Set(try await connection.query(ConsoleChartSQL.shared.rolledHours, [.timestamptz(start), .timestamptz(closedEnd)])
            .map { try $0.decode("hour") as Date })
    }

    /// Rolls up the closed hours of [`start`, `end`) not rolled yet, except hours still settling
    /// (a pending delivery), and drops rollup rows (and duplicate counts) older than a week
    /// before `start`. Called by `ConsoleRollUp`, never by a page.
    static func rollUp(start: Date, end: Date, now: Date, on connection: PostgresConnection) async throws {
        let closedEnd = closedEnd(end: end, now: now)
        guard closedEnd > start else { return }
        let done = try await rolledHours(start: start, closedEnd: closedEnd, on: connection)
        let hours = stride(from: start.timeIntervalSince1970, to: closedEnd.timeIntervalSince1970, by: 3600)
            .map { Date(timeIntervalSince1970: $0) }
        let oldest = Date(timeIntervalSince1970: start.timeIntervalSince1970 - Double(ConsoleWindow.week.seconds))
        for (from, to) in ranges(hours.filter { !done.contains($0) }) {
            try await connection.query(ConsoleChartSQL.shared.rollUpHours, [.timestamptz(from), .timestamptz(to), .timestamptz(oldest)])
        }
    }

    /// Whole hours as ranges, adjacent hours merged.
    static func ranges(_ hours: [Date]) -> [(Date, Date)] {
        var merged: [(Date, Date)] = []
        for hour in hours {
            let next = hour.addingTimeInterval(3600)
            if let last = merged.last, last.1 == hour { merged[merged.count - 1].1 = next } else { merged.append((hour, next)) }
        }
        return merged
    }

    /// The `p` quantile in seconds of a lag histogram (`ConsoleChartSQL.deliveries`: step →
    /// deliveries), as the geometric middle of the step the delivery at that rank falls in, so
    /// within 10 % of that delivery's lag (`percentile_disc`, not interpolated); `nil` for an
    /// empty histogram (nothing was processed).
    static func lagPercentile(_ p: Double, of histogram: [Int64: Int64]) -> Double? {
        let total = histogram.values.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = max(1, Int64((p * Double(total)).rounded(.up)))
        var seen: Int64 = 0
        for step in histogram.keys.sorted() {
            seen += histogram[step] ?? 0
            if seen >= rank {
                // Step 0 also holds everything under 1 ms.
                return pow(2, (Double(step) + 0.5) / 4) / 1000
            }
        }
        return nil
    }

    /// What a provider's page shows beside its charts.
    struct ProviderFacts: Sendable {
        struct Delivery: Sendable { let id: Int64; let account: String; let dedupKey: String; let eventType: String?; let receivedAt: Date; let status: String }
        struct Refusal: Sendable { let id: Int64; let account: String; let reason: String; let remoteAddress: String; let receivedAt: Date }
        /// One account's deliveries of the last 24 hours by the key that verified them.
        struct KeyUse: Sendable {
            let account: String
            let currentKey: Int64
            let previousKey: Int64
            /// Stored before ingress recorded the key (migration 0025).
            let notRecorded: Int64
            let lastPreviousKey: Date?
        }
        let lastDelivery: Delivery?
        let lastRefusal: Refusal?
        let keyRing: [KeyUse]
    }

    /// How far back the key-ring rotation state looks.
    static let keyRingSpan: TimeInterval = 86_400

    func providerFacts(provider: String, account: String?, now: Date = Date()) async throws(OperationsError) -> ProviderFacts {
        let binds: [PostgresValue] = [.text(provider), account.map { .text($0) } ?? .null]
        do {
            return try await pool.withConnection { connection in
                let delivery = try await connection.query(ConsoleChartSQL.shared.lastDelivery, binds).rows.first.map { row in
                    ProviderFacts.Delivery(id: try row.decode("id"), account: try row.decode("account"), dedupKey: try row.decode("dedup_key"),
                                           eventType: try row.decode("event_type"), receivedAt: try row.decode("received_at"),
                                           status: try row.decode("status"))
                }
                let refusal = try await connection.query(ConsoleChartSQL.shared.lastRefusal, binds).rows.first.map { row in
                    ProviderFacts.Refusal(id: try row.decode("id"), account: try row.decode("account"), reason: try row.decode("reason"),
                                          remoteAddress: try row.decode("remote_addr"), receivedAt: try row.decode("received_at"))
                }
                let keyRing = try await connection.query(ConsoleChartSQL.shared.keyRingUse,
                                                         binds + [.timestamptz(now.addingTimeInterval(-Self.keyRingSpan))]).map { row in
                    ProviderFacts.KeyUse(account: try row.decode("account"), currentKey: try row.decode("current_key"),
                                         previousKey: try row.decode("previous_key"), notRecorded: try row.decode("not_recorded"),
                                         lastPreviousKey: try row.decode("last_previous"))
                }
                return ProviderFacts(lastDelivery: delivery, lastRefusal: refusal, keyRing: keyRing)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }
}
