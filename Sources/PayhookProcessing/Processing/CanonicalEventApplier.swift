import Foundation
package import PayhookCore
import PayhookPostgres

/// One canonical event ready to apply, with where it came from.
package struct ApplicableEvent: Sendable, Equatable {
    let event: CanonicalEvent
    /// Fetched provider state (a total, refused when older than what is stored) rather than
    /// a webhook's own delta.
    let fetched: Bool
    /// Extra history for `payment_events.data` (e.g. the PXP webhook's own state word).
    var note: String? = nil
}

/// Writes canonical events into `orders`, `payments`, `payment_adjustments`, `vault_tokens`
/// and `payment_events` on a connection inside the caller's transaction.
///
/// The caller must already hold the advisory locks of ``lockKeys(for:)`` for these events;
/// the `FOR UPDATE` reads here then never wait on another processor mid-event. Every decision
/// about values is made by ``PaymentMerge`` and ``VaultTokenMerge``; this type only reads,
/// merges and writes. Card data never reaches `payment_events.data`: only provider ids,
/// status words, amounts and references are copied there.
package struct CanonicalEventApplier: Sendable {
    let logger: Logger
    /// What other features do when a token changes (``ProcessingHooks``).
    let hooks: ProcessingHooks

    /// Business keys whose locks serialize events of the same payment, order or token.
    static func lockKeys(for events: [ApplicableEvent]) -> [AdvisoryLockKey] {
        var keys: [AdvisoryLockKey] = []
        func payment(_ snapshot: PaymentSnapshot) {
            keys.append(.payment(provider: snapshot.provider.rawValue, id: snapshot.providerPaymentID))
            if let order = snapshot.providerOrderID { keys.append(.order(provider: snapshot.provider.rawValue, id: order)) }
            // Registration links payments to orders by merchant reference under the same key.
            if let reference = snapshot.merchantReference {
                keys.append(.reference(provider: snapshot.provider.rawValue, merchantReference: reference))
            }
            if let token = snapshot.vaultToken { keys.append(.token(provider: token.provider.rawValue, token: token.token)) }
        }
        for applicable in events {
            switch applicable.event {
            case .payment(let snapshot): payment(snapshot)
            case .order(let order):
                keys.append(.order(provider: order.provider.rawValue, id: order.providerOrderID))
                // Registration links provider orders by reference under the same key.
                if let reference = order.merchantReference {
                    keys.append(.reference(provider: order.provider.rawValue, merchantReference: reference))
                }
                order.payments.forEach(payment)
            case .vaultToken(let token, _): keys.append(.token(provider: token.provider.rawValue, token: token.token))
            case .unknown: break
            }
        }
        return keys
    }

    /// Applies every event of one inbound event, in order.
    ///
    /// Payment and history writes go to `pass`, and are made by its
    /// ``ApplyPass/write(into:on:)``, which the caller runs before releasing the savepoint the
    /// pass lives in; it also adds the payments the events left unlinked to the touched rows.
    /// - Parameters:
    ///   - pass: what earlier events of the same savepoint read and wrote (``ApplyPass``).
    /// - Returns: the orders and payments the events touched, for fulfillment's follow-ups.
    /// - Throws: `PostgresError` from any statement; the caller rolls back to its savepoint.
    @discardableResult
    func apply(_ events: [ApplicableEvent], inboundEventID: Int64, account: String = "", receivedAt: Date,
               pass: inout ApplyPass, on connection: PostgresConnection) async throws -> TouchedRows {
        var touched = TouchedRows()
        // Each event's position inside the inbound event names the adjustments that have no
        // provider reference of their own.
        for (index, applicable) in events.enumerated() {
            let source = EventSource(inboundEventID: inboundEventID, index: index, receivedAt: receivedAt, account: account)
            switch applicable.event {
            case .payment(let snapshot):
                let orderID = try await applyPayment(snapshot, fetched: applicable.fetched, orderID: nil, source: source,
                                                     note: applicable.note, pass: &pass, on: connection)
                if let orderID {
                    touched.orderIDs.insert(orderID)
                } else if snapshot.merchantReference != nil {
                    // It may belong to an order the merchant registered by reference.
                    pass.noteUnlinked(ApplyPass.PaymentKey(snapshot))
                }
            case .order(let order):
                touched.orderIDs.insert(try await applyOrder(order, source: source, note: applicable.note, pass: &pass,
                                                             on: connection))
            case .vaultToken(let token, let change):
                let id = try await applyToken(token, on: connection)
                var data = EventData(provider: token.provider.rawValue)
                data.token = token.token
                data.tokenStatus = token.status.rawValue
                data.tokenChange = change.rawValue
                pass.append(history(type: applicable.event.type, payment: nil, orderID: nil, tokenID: id,
                                    occurredAt: token.occurredAt, data: data, source: source))
            case .unknown(let provider, let eventType, let reference):
                var data = EventData(provider: provider.rawValue)
                data.providerEventType = eventType
                data.reference = reference
                data.note = applicable.note
                pass.append(history(type: "unknown", payment: nil, orderID: nil, tokenID: nil,
                                    occurredAt: nil, data: data, source: source))
            }
        }
        return touched
    }

    /// Orders touched, and payments that name a merchant reference but no order yet (they may
    /// belong to an order the merchant registered by reference).
    package struct TouchedRows: Sendable {
        package var orderIDs: Set<Int64> = []
        package var unlinkedPaymentIDs: [Int64] = []

        mutating func merge(_ other: TouchedRows) {
            orderIDs.formUnion(other.orderIDs)
            unlinkedPaymentIDs += other.unlinkedPaymentIDs
        }

        var isEmpty: Bool { orderIDs.isEmpty && unlinkedPaymentIDs.isEmpty }
    }

    package struct EventSource {
        let inboundEventID: Int64
        let index: Int
        let receivedAt: Date
        /// The payhook account whose route (and key ring) verified the delivery, `""` for the
        /// default route. Payments and orders belong to it: orders registered for one account
        /// are linked to and fulfilled by that account's payments only.
        var account: String = ""
        /// A stable reference for adjustments whose provider gives no identity of the event
        /// (``PaymentSnapshot/eventReference``): the same inbound event item always yields the
        /// same reference, so a replay records nothing twice.
        var itemReference: String { "inbound:\(inboundEventID):\(index)" }
    }

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
                let rows = try await connection.query(ProcessingSQL.shared.insertPlaceholderPayment,
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
                try await connection.query(ProcessingSQL.shared.updateCapturedMinor, [.int(paymentID)])
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
        switch adjustment {
        case .refund(let reference, let amount):
            try await connection.query(ProcessingSQL.shared.insertAdjustment, [
                .text(provider), .text("refund"), .text(reference), .int(paymentID), .int(amount.minorUnits),
                .text(amount.currency), .int(source.inboundEventID),
            ])
        case .refundFailed(let reference):
            try await connection.query(ProcessingSQL.shared.markRefundFailed, [
                .text(provider), .text(reference), .int(paymentID), .int(source.inboundEventID),
            ])
        case .capture(let reference, let amount):
            try await connection.query(ProcessingSQL.shared.insertAdjustment, [
                .text(provider), .text("capture"), .text(reference), .int(paymentID), .int(amount.minorUnits),
                .text(amount.currency), .int(source.inboundEventID),
            ])
        case .captureFailed(let reference):
            try await connection.query(ProcessingSQL.shared.markCaptureFailed, [
                .text(provider), .text(reference), .int(paymentID), .int(source.inboundEventID),
            ])
        case .counted(let kind, let reference, let amount):
            try await connection.query(ProcessingSQL.shared.insertAdjustment, [
                .text(provider), .text(kind), .text(reference), .int(paymentID), Self.int(amount?.minorUnits),
                Self.text(amount?.currency), .int(source.inboundEventID),
            ])
        }
    }

    /// The payment's adjustment sums, read after this event's adjustments were recorded.
    func adjustmentTotals(paymentID: Int64, on connection: PostgresConnection) async throws -> AdjustmentTotals {
        let rows = try await connection.query(ProcessingSQL.shared.adjustmentTotals, [.int(paymentID)])
        guard let row = rows.rows.first else { return AdjustmentTotals() }
        return AdjustmentTotals(
            refundedMinor: try row.decode("refunded"), chargebacks: try row.decode("chargebacks"),
            chargebackReversals: try row.decode("reversals"), captureFailures: try row.decode("capture_failures"))
    }

    // MARK: Orders

    @discardableResult
    func applyOrder(_ order: OrderSnapshot, source: EventSource, note: String?, pass: inout ApplyPass,
                    on connection: PostgresConnection) async throws -> Int64 {
        let provider = order.provider.rawValue
        let rows = try await connection.query(ProcessingSQL.shared.selectOrderForUpdate, [.text(provider), .text(order.providerOrderID)])
        var orderID: Int64
        var stale = false
        var statusAfter = order.status?.rawValue
        if let row = rows.rows.first {
            orderID = try row.decode("id")
            let storedStatus = PaymentStatus(rawValue: try row.decode("status", as: String.self))
            let storedAt: Date? = try row.decode("provider_updated_at")
            if let storedAt, let updatedAt = order.updatedAt, updatedAt < storedAt {
                stale = true
                statusAfter = storedStatus?.rawValue
            } else {
                var status = storedStatus
                if let incoming = order.status, PaymentStatus.shouldReplace(current: storedStatus, with: incoming) {
                    status = incoming
                }
                statusAfter = status?.rawValue
                let storedAmount: Int64? = try row.decode("amount_minor")
                let storedCurrency: String? = try row.decode("currency")
                let updatedAt = [storedAt, order.updatedAt].compactMap { $0 }.max()
                try await connection.query(ProcessingSQL.shared.updateOrder, [
                    .int(orderID), Self.text(order.merchantReference),
                    Self.int(order.amount?.minorUnits ?? storedAmount), Self.text(order.amount?.currency ?? storedCurrency),
                    .text(status?.rawValue ?? (try row.decode("status", as: String.self))), Self.date(updatedAt),
                ])
            }
        } else {
            orderID = try await insertOrder(order, account: source.account, on: connection)
        }
        for payment in order.payments {
            try await applyPayment(payment, fetched: true, orderID: orderID, source: source, note: nil, pass: &pass,
                                   on: connection)
        }
        var data = EventData(provider: provider)
        data.providerOrderID = order.providerOrderID
        data.providerStatus = order.providerStatus
        data.statusDetail = order.providerStatusDetail
        data.reportedStatus = order.status?.rawValue
        data.statusAfter = statusAfter
        data.amountMinor = order.amount?.minorUnits
        data.currency = order.amount?.currency
        data.merchantReference = order.merchantReference
        data.fetched = true
        data.stale = stale ? true : nil
        data.note = note
        pass.append(history(type: "order.updated", payment: nil, orderID: orderID, tokenID: nil,
                            occurredAt: order.updatedAt, data: data, source: source))
        return orderID
    }

    private func insertOrder(_ order: OrderSnapshot, account: String, on connection: PostgresConnection) async throws -> Int64 {
        let provider = order.provider.rawValue
        var reference = order.merchantReference
        for _ in 0..<2 {
            let rows = try await connection.query(ProcessingSQL.shared.insertOrder, [
                .text(provider), .text(account), .text(order.providerOrderID), Self.text(reference),
                Self.int(order.amount?.minorUnits), Self.text(order.amount?.currency),
                .text(order.status?.rawValue ?? "created"), Self.date(order.updatedAt),
            ])
            if let id = try rows.rows.first?.decode("id", as: Int64.self) { return id }
            let existing = try await connection.query(ProcessingSQL.shared.selectOrderForUpdate, [.text(provider), .text(order.providerOrderID)])
            if let id = try existing.rows.first?.decode("id", as: Int64.self) { return id }
            // Only a registered order's reference is unique (orders_merchant_reference), and this
            // row is not registered, so this is a safety net: keep the order without the reference.
            logger.warning("merchant reference already used by another order; stored without it", [
                "provider": .string(provider), "order.provider_id": .string(order.providerOrderID),
            ])
            reference = nil
        }
        throw PostgresError(kind: .serializationFailure, message: "order row could not be created")
    }

    /// The order a payment names, created bare when the payment arrives first.
    private func ensureOrder(provider: String, providerOrderID: String, account: String,
                             on connection: PostgresConnection) async throws -> Int64? {
        let rows = try await connection.query(ProcessingSQL.shared.selectOrderForUpdate, [.text(provider), .text(providerOrderID)])
        if let id = try rows.rows.first?.decode("id", as: Int64.self) { return id }
        let inserted = try await connection.query(ProcessingSQL.shared.insertOrder, [
            .text(provider), .text(account), .text(providerOrderID), .null, .null, .null, .text("created"), .null,
        ])
        return try inserted.rows.first?.decode("id", as: Int64.self)
    }

    // MARK: Vault tokens

    func applyToken(_ token: VaultTokenSnapshot, on connection: PostgresConnection) async throws -> Int64 {
        let provider = token.provider.rawValue
        let rows = try await connection.query(ProcessingSQL.shared.selectTokenForUpdate, [.text(provider), .text(token.token)])
        if let row = rows.rows.first {
            let id: Int64 = try row.decode("id")
            let storedStatus = VaultTokenStatus(rawValue: try row.decode("status", as: String.self)) ?? .active
            let storedAt: Date? = try row.decode("provider_updated_at")
            let wins = VaultTokenMerge.incomingWins(stored: storedStatus, storedAt: storedAt,
                                                    incoming: token.status, incomingAt: token.occurredAt)
            try await connection.query(ProcessingSQL.shared.updateToken, [
                .int(id), Self.text(token.account), Self.text(token.shopperReference), Self.text(token.customerID),
                Self.text(token.brand), Self.text(token.last4), Self.text(token.expiry),
                .text((wins ? token.status : storedStatus).rawValue), Self.date(token.occurredAt), .bool(wins),
                Self.text(token.firstPaymentReference), Self.text(token.kind?.rawValue), Self.text(token.paymentProfileID),
            ])
            try await hooks.tokenStatusChanged(id, wins ? token.status : storedStatus, token.occurredAt, connection)
            return id
        }
        let inserted = try await connection.query(ProcessingSQL.shared.insertToken, [
            .text(provider), .text(token.account ?? ""), .text(token.token), Self.text(token.shopperReference),
            Self.text(token.customerID), Self.text(token.brand), Self.text(token.last4), Self.text(token.expiry),
            .text(token.status.rawValue), Self.date(token.occurredAt), Self.text(token.firstPaymentReference),
            Self.text(token.kind?.rawValue), Self.text(token.paymentProfileID),
        ])
        guard let id = try inserted.rows.first?.decode("id", as: Int64.self) else {
            throw PostgresError(kind: .serializationFailure, message: "vault token row appeared concurrently")
        }
        return id
    }

    // MARK: History

    /// One `payment_events` row; the pass writes it with the rest of its history.
    private func history(type: String, payment: ApplyPass.PaymentKey?, orderID: Int64?, tokenID: Int64?, occurredAt: Date?,
                         data: EventData, source: EventSource) -> ApplyPass.HistoryRow {
        ApplyPass.HistoryRow(payment: payment, orderID: orderID, tokenID: tokenID, inboundEventID: source.inboundEventID,
                             type: type, occurredAt: occurredAt ?? source.receivedAt, data: data.json())
    }

    static func text(_ value: String?) -> PostgresValue { value.map(PostgresValue.text) ?? .null }
    static func int(_ value: Int64?) -> PostgresValue { value.map(PostgresValue.int) ?? .null }
    static func date(_ value: Date?) -> PostgresValue { value.map(PostgresValue.timestamptz) ?? .null }
}

/// `payment_events.data`: provider ids, status words, amounts and references only.
package struct EventData: Sendable {
    package struct Refund: Sendable {
        let kind: String
        let reference: String?
        let amountMinor: Int64?
    }

    let provider: String
    var providerPaymentID: String?
    var providerOrderID: String?
    var providerStatus: String?
    var providerEventType: String?
    var statusDetail: String?
    var reportedStatus: String?
    var statusBefore: String?
    var statusAfter: String?
    var amountMinor: Int64?
    var currency: String?
    var modificationAmountMinor: Int64?
    var merchantReference: String?
    var reference: String?
    var refund: Refund?
    var token: String?
    var tokenStatus: String?
    var tokenChange: String?
    var fetched: Bool?
    var stale: Bool?
    var note: String?


    init(provider: String) { self.provider = provider }

    /// Built by hand rather than with `JSONEncoder`, which dominated the per-event CPU time
    /// on Linux; keys are sorted like the encoder's `.sortedKeys` output.
    func json() -> String {
        var fields: [(String, String)] = [("provider", JSONString.quote(provider))]
        func add(_ key: String, _ value: String?) { if let value { fields.append((key, JSONString.quote(value))) } }
        func add(_ key: String, _ value: Int64?) { if let value { fields.append((key, String(value))) } }
        func add(_ key: String, _ value: Bool?) { if let value { fields.append((key, value ? "true" : "false")) } }
        add("provider_payment_id", providerPaymentID)
        add("provider_order_id", providerOrderID)
        add("provider_status", providerStatus)
        add("provider_event_type", providerEventType)
        add("status_detail", statusDetail)
        add("reported_status", reportedStatus)
        add("status_before", statusBefore)
        add("status_after", statusAfter)
        add("amount_minor", amountMinor)
        add("currency", currency)
        add("modification_amount_minor", modificationAmountMinor)
        add("merchant_reference", merchantReference)
        add("reference", reference)
        if let refund {
            var parts = ["\"kind\":" + JSONString.quote(refund.kind)]
            if let reference = refund.reference { parts.append("\"reference\":" + JSONString.quote(reference)) }
            if let amount = refund.amountMinor { parts.append("\"amount_minor\":" + String(amount)) }
            fields.append(("refund", "{" + parts.sorted().joined(separator: ",") + "}"))
        }
        add("token", token)
        add("token_status", tokenStatus)
        add("token_change", tokenChange)
        add("fetched", fetched)
        add("stale", stale)
        add("note", note)
        fields.sort { $0.0 < $1.0 }
        return "{" + fields.map { JSONString.quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
