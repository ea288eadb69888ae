import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// Pure parts of recurring charging: interval math, catch-up plans, request and settings parsing.
@Suite("Subscription intervals, plans and parsing")
struct SubscriptionUnitTests {
    static func date(_ text: String) -> Date {
        NewSubscription.parseTimestamp(text) ?? Date(timeIntervalSince1970: 0)
    }

    static func format(_ date: Date) -> String { SubscriptionHarness.format(date) }

    static func monthly(_ every: Int = 1) -> SubscriptionInterval { SubscriptionInterval(every: every, unit: .month)! }

    @Test("monthly on the 31st clamps to month ends and keeps the anchor: Jan 31, Feb 28, Mar 31, Apr 30")
    func monthEndAnchor() {
        let start = Self.date("2025-01-31T09:30:00Z")
        let dates = (1...6).map { Self.format(Self.monthly().dueDate(cycle: $0, start: start)) }
        #expect(dates == ["2025-01-31T09:30:00Z", "2025-02-28T09:30:00Z", "2025-03-31T09:30:00Z",
                          "2025-04-30T09:30:00Z", "2025-05-31T09:30:00Z", "2025-06-30T09:30:00Z"])
    }

    @Test("a leap year's February gets the 29th; every 12 months from Feb 29 lands on Feb 28, then Feb 29 again")
    func leapYears() {
        #expect(Self.format(Self.monthly().dueDate(cycle: 2, start: Self.date("2024-01-31T00:00:00Z"))) == "2024-02-29T00:00:00Z")
        let leap = Self.date("2024-02-29T12:00:00Z")
        let yearly = Self.monthly(12)
        #expect((1...5).map { Self.format(yearly.dueDate(cycle: $0, start: leap)) }
                == ["2024-02-29T12:00:00Z", "2025-02-28T12:00:00Z", "2026-02-28T12:00:00Z", "2027-02-28T12:00:00Z",
                    "2028-02-29T12:00:00Z"])
    }

    @Test("every 2 months across a year end; days and weeks are exact multiples in UTC")
    func otherUnits() {
        let start = Self.date("2025-11-30T23:59:59Z")
        #expect(Self.format(Self.monthly(2).dueDate(cycle: 2, start: start)) == "2026-01-30T23:59:59Z")
        #expect(Self.format(Self.monthly(2).dueDate(cycle: 3, start: start)) == "2026-03-30T23:59:59Z")
        let daily = SubscriptionInterval(every: 3, unit: .day)!
        #expect(Self.format(daily.dueDate(cycle: 4, start: start)) == "2025-12-09T23:59:59Z")
        let weekly = SubscriptionInterval(every: 2, unit: .week)!
        #expect(Self.format(weekly.dueDate(cycle: 3, start: start)) == "2025-12-28T23:59:59Z")
        #expect(SubscriptionInterval(every: 0, unit: .day) == nil)
        #expect(SubscriptionInterval(every: 121, unit: .month) == nil)
    }

    @Test("an interval reads as words: one unit singular, more plural")
    func readable() {
        #expect(Self.monthly().readable == "every month")
        #expect(SubscriptionInterval(every: 3, unit: .day)!.readable == "every 3 days")
        #expect(SubscriptionInterval(every: 2, unit: .week)!.readable == "every 2 weeks")
    }

    @Test("the last cycle due at or before a date, for each unit, at and around due dates", arguments: [
        SubscriptionInterval.Unit.day, .week, .month,
    ])
    func lastCycle(unit: SubscriptionInterval.Unit) {
        let interval = SubscriptionInterval(every: 1, unit: unit)!
        let start = Self.date("2025-01-31T08:00:00Z")
        #expect(interval.lastCycle(dueAtOrBefore: start.addingTimeInterval(-1), start: start) == 0)
        for cycle in 1...30 {
            let due = interval.dueDate(cycle: cycle, start: start)
            #expect(interval.lastCycle(dueAtOrBefore: due, start: start) == cycle)
            #expect(interval.lastCycle(dueAtOrBefore: due.addingTimeInterval(-1), start: start) == cycle - 1)
        }
    }

    @Test("catch-up all charges every missed cycle once; latest charges only the current one")
    func catchUpPlans() {
        let start = Self.date("2025-01-01T00:00:00Z")
        let daily = SubscriptionInterval(every: 1, unit: .day)!
        let now = Self.date("2025-01-05T12:00:00Z")  // cycles 1…5 due
        let all = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 2, maxCycles: nil, endAt: nil, now: now, catchUp: .all)
        #expect(all.charges.map(\.cycle) == [2, 3, 4, 5])
        #expect(all.nextCycle == 6 && Self.format(all.nextChargeAt) == "2025-01-06T00:00:00Z" && all.status == .active)
        let latest = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 2, maxCycles: nil, endAt: nil, now: now, catchUp: .latest)
        #expect(latest.charges.map(\.cycle) == [5])
        #expect(latest.nextCycle == 6)
        let notYet = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 6, maxCycles: nil, endAt: nil, now: now, catchUp: .all)
        #expect(notYet.charges.isEmpty && notYet.nextCycle == 6)
        let capped = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 1, maxCycles: nil, endAt: nil, now: now,
                                                catchUp: .all, limit: 2)
        #expect(capped.charges.map(\.cycle) == [1, 2] && capped.nextCycle == 3 && capped.nextChargeAt <= now)
    }

    @Test("max_cycles and end_at complete the subscription after its last cycle, in both catch-up modes")
    func completion() {
        let start = Self.date("2025-01-01T00:00:00Z")
        let daily = SubscriptionInterval(every: 1, unit: .day)!
        let now = Self.date("2025-01-10T00:00:00Z")
        for mode in SubscriptionSettings.CatchUp.allCases {
            let byCount = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 2, maxCycles: 3, endAt: nil, now: now, catchUp: mode)
            #expect(byCount.charges.map(\.cycle) == (mode == .all ? [2, 3] : [3]))
            #expect(byCount.status == .completed && byCount.nextCycle == 4)
            let byDate = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 1, maxCycles: nil,
                                                    endAt: Self.date("2025-01-02T06:00:00Z"), now: now, catchUp: mode)
            #expect(byDate.charges.map(\.cycle) == (mode == .all ? [1, 2] : [2]))
            #expect(byDate.status == .completed)
        }
        let last = SubscriptionScheduler.plan(interval: daily, startAt: start, cycle: 3, maxCycles: 3, endAt: nil,
                                              now: Self.date("2025-01-03T00:00:00Z"), catchUp: .all)
        #expect(last.charges.map(\.cycle) == [3] && last.status == .completed)
    }

    @Test("idempotency keys carry the installation namespace and a fresh random nonce, and fit Adyen's and Mercado Pago's 64 characters and PXP's 50")
    func keys() {
        #expect(Charge.idempotencyKey(namespace: "ph0a1b2c3d", subscriptionID: 42, cycle: 3, attempt: 2, nonce: "0badf00d") == "ph0a1b2c3d-sub-42-c3-a2-0badf00d")
        let nonces = Set((0..<64).map { _ in Charge.newKeyNonce() })
        #expect(nonces.count == 64 && nonces.allSatisfy { $0.range(of: "^[0-9a-f]{8}$", options: .regularExpression) != nil }, "\(nonces)")
        let nonce = Charge.newKeyNonce()
        #expect(Charge.idempotencyKey(namespace: "ph0a1b2c3d", subscriptionID: .max, cycle: 999_999, attempt: Int(Int32.max), nonce: nonce).count <= 64)
        #expect(Charge.idempotencyKey(namespace: "ph0a1b2c3d", subscriptionID: 9_999_999_999, cycle: 99_999, attempt: 99, nonce: nonce).count <= 50)
    }

    @Test("the dunning schedule parses d/h/m/s lists and none; bad entries name the problem")
    func dunningSchedule() throws {
        #expect(try SubscriptionSettings.parseDunningSchedule("1d,3d,5d").get() == [.seconds(86_400), .seconds(259_200), .seconds(432_000)])
        #expect(try SubscriptionSettings.parseDunningSchedule(" 12h, 30m ,45s").get() == [.seconds(43_200), .seconds(1_800), .seconds(45)])
        #expect(try SubscriptionSettings.parseDunningSchedule("none").get() == [])
        for bad in ["", "1d,,2d", "3x", "0d", "-1d", "400d", "d"] {
            #expect(throws: SubscriptionSettings.ScheduleProblem.self, "\(bad)") { try SubscriptionSettings.parseDunningSchedule(bad).get() }
        }
    }

    @Test("configuration reads the recurring-charge variables and reports bad ones by name")
    func configuration() throws {
        let defaults = try Configuration.parse(environment: [:]) { _ in "" }
        #expect(defaults.subscriptions == SubscriptionSettings())
        #expect(defaults.subscriptions.catchUp == .all)
        let custom = try Configuration.parse(environment: [
            "PAYHOOK_SCHEDULER_CATCH_UP": "latest", "PAYHOOK_DUNNING_SCHEDULE": "2h,1d", "PAYHOOK_CHARGE_MAX_ATTEMPTS": "7",
        ]) { _ in "" }
        #expect(custom.subscriptions.catchUp == .latest)
        #expect(custom.subscriptions.dunningSchedule == [.seconds(7200), .seconds(86_400)])
        #expect(custom.subscriptions.chargeMaxAttempts == 7)
        do {
            _ = try Configuration.parse(environment: ["PAYHOOK_SCHEDULER_CATCH_UP": "some", "PAYHOOK_DUNNING_SCHEDULE": "soon"]) { _ in "" }
            Issue.record("bad settings were accepted")
        } catch {
            #expect(Set(error.problems.map(\.variable)) == ["PAYHOOK_SCHEDULER_CATCH_UP", "PAYHOOK_DUNNING_SCHEDULE"])
        }
    }

    static let validBody = #"{"vault_token": {"provider": "adyen", "token": "8415"}, "amount": {"value": 1999, "currency": "EUR"}, "interval": {"every": 1, "unit": "month"}, "reference": "sub-42", "max_cycles": null}"#

    @Test("a create body parses; start_at defaults to now (whole seconds)")
    func createBody() throws {
        let now = Self.date("2025-03-01T10:00:00.750Z")
        let draft = try NewSubscription.parse(Array(Self.validBody.utf8), now: now)
        #expect(draft.token == .provider(.adyen, token: "8415"))
        #expect(draft.amount == (try Money(minorUnits: 1999, currency: "EUR")))
        #expect(draft.interval == Self.monthly())
        #expect(Self.format(draft.startAt) == "2025-03-01T10:00:00Z" && draft.startAt.timeIntervalSince1970.rounded() == draft.startAt.timeIntervalSince1970)
        #expect(draft.reference == "sub-42" && draft.maxCycles == nil)
        let byID = try NewSubscription.parse(Array(#"{"vault_token_id": 7, "amount": {"value": 5, "currency": "JPY"}, "interval": {"every": 2, "unit": "week"}, "reference": "r", "start_at": "2025-03-01T10:00:00+01:00", "max_cycles": 3}"#.utf8), now: now)
        #expect(byID.token == .id(7) && byID.maxCycles == 3)
        #expect(Self.format(byID.startAt) == "2025-03-01T09:00:00Z")
    }

    @Test("invalid create bodies are refused naming the field", arguments: [
        (#"{"amount": 1}"#, "vault_token"),
        (#"[1]"#, "body"),
        (#"{"vault_token": {"provider": "stripe", "token": "x"}}"#, "vault_token.provider"),
        (#"{"vault_token": {"provider": "adyen", "token": ""}}"#, "vault_token.token"),
        (#"{"vault_token": {"provider": "adyen", "token": "x"}, "vault_token_id": 3}"#, "vault_token"),
        (#"{"vault_token_id": -3}"#, "vault_token_id"),
        (#"{"vault_token_id": 3, "amount": {"value": 19.99, "currency": "EUR"}}"#, "amount.value"),
        (#"{"vault_token_id": 3, "amount": {"value": "1999", "currency": "EUR"}}"#, "amount.value"),
        (#"{"vault_token_id": 3, "amount": {"value": true, "currency": "EUR"}}"#, "amount.value"),
        (#"{"vault_token_id": 3, "amount": {"value": 0, "currency": "EUR"}}"#, "amount.value"),
        (#"{"vault_token_id": 3, "amount": {"value": 2e3, "currency": "EUR"}}"#, "amount.value"),
        (#"{"vault_token_id": 3, "amount": {"value": 99999999999999999999, "currency": "EUR"}}"#, "amount.value"),
        (#"{"vault_token_id": 3, "vault_token_id": 4}"#, "body"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "eur"}}"#, "amount.currency"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "EUR"}, "interval": {"every": 1, "unit": "year"}}"#, "interval.unit"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "EUR"}, "interval": {"every": 0, "unit": "day"}}"#, "interval.every"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "EUR"}, "interval": {"every": 1, "unit": "day"}, "start_at": "tomorrow", "reference": "r"}"#, "start_at"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "EUR"}, "interval": {"every": 1, "unit": "day"}, "reference": ""}"#, "reference"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "EUR"}, "interval": {"every": 1, "unit": "day"}, "reference": "r", "max_cycles": 0}"#, "max_cycles"),
        (#"{"vault_token_id": 3, "amount": {"value": 10, "currency": "EUR"}, "interval": {"every": 1, "unit": "day"}, "reference": "r", "colour": "red"}"#, "colour"),
    ])
    func invalidBodies(body: String, field: String) {
        do {
            _ = try NewSubscription.parse(Array(body.utf8), now: Date())
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.field == field, "\(body): \(error.message)")
        }
    }
}
