import Foundation
import PayhookAdmin
import PayhookCore
import PayhookOperations
import PayhookPostgres
import PayhookProcessing
import PayhookSubscriptions

/// Search by any key an operator is handed (provider payment id, order id, merchant reference,
/// dedup key, idempotency key) and each hit's journey through payhook.
extension ConsoleReads {
    /// One step of a journey: when, which stage, what happened and how it ended.
    struct Step: Sendable {
        /// `received`, `verified`, `processed`, `dead letter`, `payment`, `order`, `job`, `callback`, `charge`.
        let stage: String
        let at: Date?
        let summary: String
        /// `ok`, `waiting` or `failed`: how the page colours the step.
        let outcome: String
        let link: String?

        init(_ stage: String, at: Date?, _ summary: String, outcome: String = "ok", link: String? = nil) {
            self.stage = stage
            self.at = at
            self.summary = summary
            self.outcome = outcome
            self.link = link
        }
    }

    struct Hit: Sendable {
        let title: String
        let link: String?
        let steps: [Step]
    }

    /// Every payment, order, delivery and charge that `text` names, each with its journey.
    func search(_ text: String) async throws(OperationsError) -> [Hit] {
        let key = text.trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty else { return [] }
        do {
            return try await pool.withConnection { connection in
                var hits: [Hit] = []
                var shownPayments = Set<Int64>()
                let numeric = Int64(key.hasPrefix("#") ? String(key.dropFirst()) : key)
                for row in try await connection.query(ConsoleSQL.shared.searchOrders, [.text(key), numeric.map { .int($0) } ?? .null]) {
                    let id: Int64 = try row.decode("id")
                    let payments = try await connection.query(ConsoleSQL.shared.paymentsOfOrder, [.int(id)]).map { try $0.decode("id", as: Int64.self) }
                    var steps = try await orderSteps(id, on: connection)
                    for payment in payments {
                        shownPayments.insert(payment)
                        steps += try await paymentSteps(payment, on: connection, withOrder: false)
                    }
                    hits.append(Hit(title: "Order \(id)", link: "/console/orders/\(id)", steps: Self.ordered(steps)))
                }
                for row in try await connection.query(ConsoleSQL.shared.searchPayments, [.text(key)]) {
                    let id: Int64 = try row.decode("id")
                    guard shownPayments.insert(id).inserted else { continue }
                    hits.append(Hit(title: "Payment \(id)", link: nil,
                                    steps: Self.ordered(try await paymentSteps(id, on: connection, withOrder: true))))
                }
                for row in try await connection.query(ConsoleSQL.shared.searchInbound, [.text(key)]) {
                    let event = try InboundSummary(row: row)
                    var steps = event.steps + (try await Self.deadLetterSteps(inboundEvents: [event.id], jobs: [], on: connection))
                    for payment in try await connection.query(ConsoleSQL.shared.paymentsOfInbound, [.int(event.id)]) {
                        steps += try await paymentSteps(try payment.decode("id"), on: connection, withOrder: true)
                    }
                    hits.append(Hit(title: "Delivery \(event.id) (\(event.provider))", link: nil, steps: Self.ordered(Self.distinct(steps))))
                }
                for row in try await connection.query(ConsoleSQL.shared.searchCharges, [.text(key)]) {
                    let subscription: Int64 = try row.decode("subscription_id")
                    let charge: Int64 = try row.decode("id")
                    let detailRows = try await connection.query(SubscriptionSQL.shared.selectCharges, [.int(subscription)])
                    guard let found = try detailRows.map({ try Charge(row: $0) }).first(where: { $0.id == charge }) else { continue }
                    var steps = [Self.chargeStep(found)]
                    steps += try await jobSteps([found.idempotencyKey], on: connection)
                    hits.append(Hit(title: "Charge \(charge) (subscription \(subscription), cycle \(found.cycle))",
                                    link: "/console/subscriptions/\(subscription)", steps: Self.ordered(steps)))
                }
                return hits
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// `steps` without repeats: a delivery's own steps come back with each payment it changed.
    static func distinct(_ steps: [Step]) -> [Step] {
        var seen = Set<String>()
        return steps.filter { seen.insert("\($0.stage)|\($0.at?.timeIntervalSince1970 ?? -1)|\($0.summary)").inserted }
    }

    /// The order a journey reads in, for steps of the same second.
    static let stageRank = ["received", "verified", "processed", "dead letter", "payment", "order", "job", "callback", "charge"]

    /// Steps sorted by time, steps without a time (not happened yet) last. Within one second
    /// (the precision shown) the journey's stage order wins: a processor writes the payment
    /// rows and marks the delivery processed in one transaction, whose timestamps differ by
    /// microseconds in whichever order its statements ran.
    static func ordered(_ steps: [Step]) -> [Step] {
        func key(_ step: Step) -> (Double, Int) {
            (step.at.map { $0.timeIntervalSince1970.rounded(.down) } ?? .infinity, stageRank.firstIndex(of: step.stage) ?? stageRank.count)
        }
        return steps.enumerated().sorted { lhs, rhs in
            let (l, r) = (key(lhs.element), key(rhs.element))
            if l != r { return l < r }
            switch (lhs.element.at, rhs.element.at) {
            case let (a?, b?) where a != b: return a < b
            default: return lhs.offset < rhs.offset
            }
        }.map(\.element)
    }

    struct InboundSummary: Sendable {
        let id: Int64
        let provider: String
        let account: String
        let dedupKey: String
        let eventType: String?
        let receivedAt: Date
        let status: String
        let attempts: Int
        let processedAt: Date?
        let lastError: String?

        init(row: PostgresRow) throws {
            id = try row.decode("id")
            provider = try row.decode("provider")
            account = try row.decode("account")
            dedupKey = try row.decode("dedup_key")
            eventType = try row.decode("event_type")
            receivedAt = try row.decode("received_at")
            status = try row.decode("status")
            attempts = try row.decode("attempts")
            processedAt = try row.decode("processed_at")
            lastError = try row.decode("last_error")
        }

        /// Received and verified happen together: ingress stores only what verified.
        var steps: [Step] {
            let what = "\(provider)\(account.isEmpty ? "" : "/" + account) delivery \(id)"
                + (eventType.map { " (\($0))" } ?? "") + ", dedup key \(dedupKey)"
            let processed: Step = switch status {
            case "processed": Step("processed", at: processedAt, "normalized after \(attempts) attempt(s)")
            case "dead": Step("processed", at: nil, "gave up after \(attempts) attempt(s): \(lastError ?? "no error recorded")",
                              outcome: "failed", link: "/console/dead-letters?source=inbound_event&status=")
            default: Step("processed", at: nil, "pending, \(attempts) attempt(s) so far"
                          + (lastError.map { "; last error: \($0)" } ?? ""), outcome: "waiting")
            }
            return [Step("received", at: receivedAt, what), Step("verified", at: receivedAt, "signature verified, stored"), processed]
        }
    }

    private func paymentSteps(_ id: Int64, on connection: PostgresConnection, withOrder: Bool) async throws -> [Step] {
        guard let row = try await connection.query(ConsoleSQL.shared.payment, [.int(id)]).rows.first else { return [] }
        var steps: [Step] = []
        var deliveries: [Int64] = []
        for event in try await connection.query(ConsoleSQL.shared.paymentInbound, [.int(id)]) {
            let summary = try InboundSummary(row: event)
            deliveries.append(summary.id)
            steps += summary.steps
        }
        steps += try await Self.deadLetterSteps(inboundEvents: deliveries, jobs: [], on: connection)
        let providerPaymentID: String = try row.decode("provider_payment_id")
        let provider: String = try row.decode("provider")
        let status: String = try row.decode("status")
        let amount: Int64? = try row.decode("amount_minor")
        let currency: String? = try row.decode("currency")
        let money = amount.map { ConsoleMoney.format($0, currency ?? "") } ?? "amount unknown"
        let reference: String? = try row.decode("merchant_reference")
        steps.append(Step("payment", at: try row.decode("created_at"),
                          "payment \(id): \(provider) \(providerPaymentID), \(money)" + (reference.map { ", reference \($0)" } ?? "")))
        // Recorded time, not the provider's: the journey is what payhook did, and when.
        for event in try await connection.query(ConsoleSQL.shared.paymentEvents, [.int(id)]) {
            let occurred: Date = try event.decode("occurred_at")
            steps.append(Step("payment", at: try event.decode("recorded_at"),
                              "event \(try event.decode("type", as: String.self)) (provider time \(HTML.utc(occurred)))"))
        }
        steps.append(Step("payment", at: try row.decode("updated_at"), "payment \(id) is \(status)",
                          outcome: ["declined", "failed", "expired", "charged_back", "canceled"].contains(status) ? "failed" : "ok"))
        if withOrder, let order: Int64 = try row.decode("order_id") {
            steps += try await orderSteps(order, on: connection)
        }
        var keys: [String] = []
        for charge in try await connection.query(ConsoleSQL.shared.chargesOfPayment, [.text(providerPaymentID)]) {
            let key: String = try charge.decode("idempotency_key")
            keys.append(key)
            let subscription: Int64 = try charge.decode("subscription_id")
            steps.append(Step("charge", at: try charge.decode("created_at"),
                              "charge \(try charge.decode("id", as: Int64.self)) of subscription \(subscription), cycle "
                                + "\(try charge.decode("cycle", as: Int.self)) attempt \(try charge.decode("attempt", as: Int.self)): "
                                + "\(try charge.decode("status", as: String.self)), key \(key)",
                              link: "/console/subscriptions/\(subscription)"))
        }
        steps += try await jobSteps(keys, on: connection)
        return steps
    }

    private func orderSteps(_ id: Int64, on connection: PostgresConnection) async throws -> [Step] {
        guard let order = try await OrderRecord.load(id: id, withCallbacks: true, on: connection) else { return [] }
        var steps = [Step("order", at: order.createdAt, "order \(id) (\(order.merchantReference ?? order.providerOrderID ?? "")): \(order.status)",
                          link: "/console/orders/\(id)")]
        if let registered = order.registeredAt {
            steps.append(Step("order", at: registered, "registered by the merchant"
                              + (order.expectedAmountMinor.map { ", expects " + ConsoleMoney.format($0, order.expectedCurrency ?? "") } ?? "")))
        }
        steps.append(Step("order", at: order.fulfilledAt, "fulfillment \(order.fulfillmentStatus)"
                          + (order.reviewReason.map { ": \($0)" } ?? ""),
                          outcome: ["needs_review", "failed"].contains(order.fulfillmentStatus) ? "failed"
                              : order.fulfillmentStatus == "fulfilled" ? "ok" : "waiting"))
        for callback in order.callbacks {
            steps.append(Self.callbackStep(callback))
        }
        steps += try await jobSteps(["fulfill_order:\(id)"] + order.callbacks.map { "merchant_callback:\($0.webhookID)" }, on: connection)
        return steps
    }

    /// One element of a text-array literal, quoted so commas and braces in a key stay inside it.
    static func arrayElement(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func callbackStep(_ callback: OrderRecord.Callback) -> Step {
        let answer = callback.lastStatusCode.map { "last answer HTTP \($0)" } ?? "no answer yet"
        return Step("callback", at: callback.deliveredAt ?? callback.createdAt,
                    "\(callback.type) \(callback.webhookID): \(callback.status) after \(callback.attempts) attempt(s), \(answer)",
                    outcome: callback.status == "delivered" ? "ok" : callback.status == "pending" ? "waiting" : "failed")
    }

    static func chargeStep(_ charge: Charge) -> Step {
        let outcome = switch charge.status {
        case "succeeded": "ok"
        case "pending", "unknown": "waiting"
        default: "failed"
        }
        return Step("charge", at: charge.settledAt ?? charge.attemptedAt ?? charge.createdAt,
                    "cycle \(charge.cycle) attempt \(charge.attempt): \(charge.status), \(ConsoleMoney.format(charge.amountMinor, charge.currency)), key \(charge.idempotencyKey)"
                        + (charge.providerPaymentID.map { ", provider payment \($0)" } ?? ""),
                    outcome: outcome, link: "/console/subscriptions/\(charge.subscriptionID)")
    }

    private func jobSteps(_ keys: [String], on connection: PostgresConnection) async throws -> [Step] {
        guard !keys.isEmpty else { return [] }
        var jobs: [Int64] = []
        let steps = try await connection.query(ConsoleSQL.shared.jobsByKey, [.text("{" + keys.map(Self.arrayElement).joined(separator: ",") + "}")]).map { row in
            jobs.append(try row.decode("id"))
            let state: String = try row.decode("state")
            let outcome = switch state {
            case "succeeded": "ok"
            case "discarded", "cancelled": "failed"
            default: "waiting"
            }
            return Step("job", at: try row.decode("finalized_at") ?? row.decode("created_at"),
                        "job \(try row.decode("id", as: Int64.self)) \(try row.decode("kind", as: String.self)): \(state), "
                            + "attempt \(try row.decode("attempt", as: Int.self)) of \(try row.decode("max_attempts", as: Int.self))",
                        outcome: outcome)
        }
        return steps + (try await Self.deadLetterSteps(inboundEvents: [], jobs: jobs, on: connection))
    }

    /// The dead letters of these deliveries and jobs: when each opened and why, and who
    /// replayed or discarded it, with their note. A replayed delivery's journey would otherwise
    /// show only its final `processed` step.
    static func deadLetterSteps(inboundEvents: [Int64], jobs: [Int64], on connection: PostgresConnection) async throws -> [Step] {
        guard !inboundEvents.isEmpty || !jobs.isEmpty else { return [] }
        var steps: [Step] = []
        for row in try await connection.query(ConsoleSQL.shared.deadLettersOfSources, [.integerArray(inboundEvents), .integerArray(jobs)]) {
            let id: Int64 = try row.decode("id")
            let status: String = try row.decode("status")
            let error: String? = try row.decode("error")
            let link = "/console/dead-letters/\(id)"
            steps.append(Step("dead letter", at: try row.decode("created_at"),
                              "dead letter \(id) opened (\(try row.decode("reason", as: String.self)))" + (error.map { ": \($0)" } ?? ""),
                              outcome: "failed", link: link))
            if status != "open" {
                let actor: String = try row.decode("resolved_by") ?? "unknown"
                let note: String? = try row.decode("note")
                steps.append(Step("dead letter", at: try row.decode("resolved_at"),
                                  "dead letter \(id) \(status) by \(actor)" + (note.map { ": \($0)" } ?? ""),
                                  outcome: status == "replayed" ? "ok" : "failed", link: link))
            }
        }
        return steps
    }
}

/// Minor units as an operator reads them: `19.99 EUR`, through `Money`'s own exponent table.
enum ConsoleMoney {
    static func format(_ minor: Int64, _ currency: String) -> String {
        guard let money = try? Money(minorUnits: minor, currency: currency) else { return "\(minor) (minor units) \(currency)" }
        return "\(money.decimalString) \(money.currency)"
    }
}
