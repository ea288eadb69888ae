import Foundation
import PayhookCore
import PayhookLedger
import PayhookPostgres

/// What the applier carries from one event to the next while it applies a run of events inside
/// one savepoint: every payment as this pass leaves it, and the rows it has not written yet.
///
/// Why: applying an event cost three round trips to PostgreSQL (read its payment, write it,
/// write its history row), and on a machine that also runs PostgreSQL the round trips'
/// wake-ups, more than the statements' own work, bounded processing (bench/end-to-end). A pass
/// reads every payment its events name in one statement, merges each event into the payment
/// it holds, and writes when it ends: new payments in one statement, changed ones in another,
/// then every history row in a third. What it holds of a payment is what a read would return
/// after those writes (its timestamp rounded as the column stores it), so that each event is
/// merged exactly as if the earlier ones had been written and read back.
///
/// A pass is valid only inside its savepoint: after a rollback to it, what the pass holds no
/// longer matches the database, and the caller starts a new pass. Its writes must run
/// (``write(into:on:)``) before the savepoint is released, and before anything else in the
/// transaction reads `payments` or `payment_events`.
struct ApplyPass {
    struct PaymentKey: Hashable {
        let provider: String
        let providerPaymentID: String

        init(provider: String, providerPaymentID: String) {
            self.provider = provider
            self.providerPaymentID = providerPaymentID
        }

        init(_ snapshot: PaymentSnapshot) {
            self.init(provider: snapshot.provider.rawValue, providerPaymentID: snapshot.providerPaymentID)
        }
    }

    /// A payment as the database will hold it once the pass has written.
    struct Payment {
        /// `nil` while the row does not exist: a payment first seen in this pass is inserted
        /// when the pass writes, or earlier if something must reference its row.
        var id: Int64?
        var state: PaymentState

        init(id: Int64?, state: PaymentState) {
            self.id = id
            self.state = state
        }

        /// A row read with ``ProcessingSQL/paymentColumns``.
        init(row: PostgresRow) throws(PostgresError) {
            let statusText: String = try row.decode("status")
            var state = PaymentState()
            state.status = PaymentStatus(rawValue: statusText)
            state.amountMinor = try row.decode("amount_minor")
            state.currency = try row.decode("currency")
            state.refundedMinor = try row.decode("refunded_minor")
            state.chargebacks = try row.decode("chargebacks")
            state.chargebackReversals = try row.decode("chargeback_reversals")
            state.captureFailures = try row.decode("capture_failures")
            state.statusDetail = try row.decode("status_detail")
            state.method = try row.decode("method")
            state.funding = try row.decode("funding")
            state.merchantReference = try row.decode("merchant_reference")
            state.account = try row.decode("account")
            if state.account == "" { state.account = nil }
            state.orderID = try row.decode("order_id")
            state.providerUpdatedAt = try row.decode("provider_updated_at")
            self.init(id: try row.decode("id"), state: state)
        }
    }

    /// One `payment_events` row, written when the pass ends.
    struct HistoryRow {
        /// The payment the row is about; its id is looked up when the pass writes.
        let payment: PaymentKey?
        let orderID: Int64?
        let tokenID: Int64?
        let inboundEventID: Int64
        let type: String
        let occurredAt: Date
        let data: String
    }

    /// Payments this pass has read or changed. `.some(nil)`: read, and absent. A key not here
    /// has not been read in this pass, so the database must be asked.
    private var payments: [PaymentKey: Payment?] = [:]
    /// Payments whose state is not written yet, in the order they were first changed (new rows
    /// get their ids in that order).
    private var unwritten: [PaymentKey] = []
    private var history: [HistoryRow] = []
    /// Payments that name a merchant reference but no order (`TouchedRows.unlinkedPaymentIDs`).
    private var unlinked: [PaymentKey] = []

    /// The payment as this pass holds it, if it knows it: `nil` when it must be read,
    /// `.some(nil)` when it is known not to exist.
    func payment(_ key: PaymentKey) -> Payment?? { payments[key] }

    /// Records what a read of `key` returned.
    mutating func remember(_ payment: Payment?, for key: PaymentKey) {
        payments[key] = .some(payment)
    }

    /// Sets the payment's state, to be written when the pass writes.
    mutating func change(_ key: PaymentKey, to state: PaymentState) {
        var stored = state
        // As the column stores it: a later event compares its own timestamp with this one.
        stored.providerUpdatedAt = state.providerUpdatedAt.flatMap(PostgresValue.storedTimestamp)
        let id = payments[key]??.id
        payments[key] = .some(Payment(id: id, state: stored))
        if !unwritten.contains(key) { unwritten.append(key) }
    }

    /// The id of the payment's row, inserting the row now if the pass holds it unwritten:
    /// adjustments reference the row. `nil` when the payment does not exist at all.
    mutating func rowID(of key: PaymentKey, on connection: PostgresConnection) async throws -> Int64? {
        guard let known = payments[key], let payment = known else { return nil }
        if let id = payment.id { return id }
        let rows = try await connection.query(LedgerSQL.shared.insertPayment, Self.insertBinds(key, payment.state))
        guard let id = try rows.rows.first?.decode("id", as: Int64.self) else {
            throw PostgresError(kind: .other, message: "payment insert returned no row")
        }
        payments[key] = .some(Payment(id: id, state: payment.state))
        unwritten.removeAll { $0 == key }
        return id
    }

    mutating func append(_ row: HistoryRow) { history.append(row) }

    mutating func noteUnlinked(_ key: PaymentKey) { unlinked.append(key) }

    /// Reads and locks, in one statement, every payment that `events` name, and remembers each
    /// (absent ones as absent). The caller holds the events' advisory locks, so no other
    /// processor creates or changes these payments until the transaction ends.
    mutating func readPayments(named events: [ApplicableEvent], on connection: PostgresConnection) async throws {
        var keys: [PaymentKey] = []
        var seen: Set<PaymentKey> = []
        func add(_ snapshot: PaymentSnapshot) {
            let key = PaymentKey(snapshot)
            if payments[key] == nil, seen.insert(key).inserted { keys.append(key) }
        }
        for applicable in events {
            switch applicable.event {
            case .payment(let snapshot): add(snapshot)
            case .order(let order): order.payments.forEach(add)
            case .vaultToken, .unknown: break
            }
        }
        guard !keys.isEmpty else { return }
        var providers = PostgresArray(.text, capacity: keys.count * 8)
        var ids = PostgresArray(.text, capacity: keys.count * 24)
        for key in keys {
            try providers.append(key.provider)
            try ids.append(key.providerPaymentID)
        }
        let rows = try await connection.query(ProcessingSQL.shared.selectPaymentsForUpdate, [.array(providers), .array(ids)])
        for key in keys { payments[key] = .some(nil) }
        for row in rows {
            let key = PaymentKey(provider: try row.decode("provider"), providerPaymentID: try row.decode("provider_payment_id"))
            payments[key] = .some(try Payment(row: row))
        }
    }

    /// Writes what the pass holds unwritten (new payments, changed payments, then history, one
    /// statement each) and adds the ids of the unlinked payments to `touched`.
    mutating func write(into touched: inout TouchedRows, on connection: PostgresConnection) async throws {
        try await writePayments(on: connection)
        try await writeHistory(on: connection)
        for key in unlinked {
            guard let id = payments[key]??.id else { throw Self.unresolved(key) }
            touched.unlinkedPaymentIDs.append(id)
        }
        unlinked.removeAll()
    }

    private mutating func writePayments(on connection: PostgresConnection) async throws {
        guard !unwritten.isEmpty else { return }
        var inserts: [PaymentKey] = []
        var updates: [(id: Int64, state: PaymentState)] = []
        for key in unwritten {
            guard let known = payments[key], let payment = known else { continue }
            if let id = payment.id { updates.append((id, payment.state)) } else { inserts.append(key) }
        }
        if !inserts.isEmpty {
            var columns = PaymentColumns(capacity: inserts.count)
            var providers = PostgresArray(.text, capacity: inserts.count * 8)
            var ids = PostgresArray(.text, capacity: inserts.count * 24)
            for key in inserts {
                try providers.append(key.provider)
                try ids.append(key.providerPaymentID)
                try columns.append(payments[key]!!.state)
            }
            let rows = try await connection.query(LedgerSQL.shared.insertPayments,
                                                  [.array(providers), .array(ids)] + columns.binds)
            for row in rows {
                let key = PaymentKey(provider: try row.decode("provider"), providerPaymentID: try row.decode("provider_payment_id"))
                payments[key]??.id = try row.decode("id")
            }
            for key in inserts where payments[key]??.id == nil { throw Self.unresolved(key) }
        }
        if !updates.isEmpty {
            var columns = PaymentColumns(capacity: updates.count)
            var ids = PostgresArray(.int8, capacity: updates.count * 12)
            for update in updates {
                try ids.append(update.id)
                try columns.append(update.state)
            }
            try await connection.query(LedgerSQL.shared.updatePayments, [.array(ids)] + columns.binds)
        }
        unwritten.removeAll()
    }

    /// Writes the history rows appended since the last call, in the order they were appended
    /// (their ids follow that order).
    private mutating func writeHistory(on connection: PostgresConnection) async throws {
        guard !history.isEmpty else { return }
        var paymentIDs = PostgresArray(.int8, capacity: history.count * 12)
        var orderIDs = PostgresArray(.int8, capacity: history.count * 12)
        var tokenIDs = PostgresArray(.int8, capacity: history.count * 12)
        var inboundIDs = PostgresArray(.int8, capacity: history.count * 12)
        var types = PostgresArray(.text, capacity: history.count * 24)
        var times = PostgresArray(.timestamptz, capacity: history.count * 12)
        var data = PostgresArray(.jsonb, capacity: history.count * 256)
        for row in history {
            if let key = row.payment {
                guard let id = payments[key]??.id else { throw Self.unresolved(key) }
                try paymentIDs.append(id)
            } else {
                paymentIDs.appendNull()
            }
            try orderIDs.appendOptional(row.orderID)
            try tokenIDs.appendOptional(row.tokenID)
            try inboundIDs.append(row.inboundEventID)
            try types.append(row.type)
            try times.append(row.occurredAt)
            try data.append(row.data)
        }
        try await connection.query(ProcessingSQL.shared.insertPaymentEvents, [
            .array(paymentIDs), .array(orderIDs), .array(tokenIDs), .array(inboundIDs), .array(types), .array(times), .array(data),
        ])
        history.removeAll(keepingCapacity: true)
    }

    private static func unresolved(_ key: PaymentKey) -> PostgresError {
        PostgresError(kind: .other, message: "payment \(key.provider)/\(key.providerPaymentID) has no row after the pass wrote")
    }

    /// The binds of the single-row `insertPayment`.
    static func insertBinds(_ key: PaymentKey, _ state: PaymentState) -> [PostgresValue] {
        typealias Bind = CanonicalEventApplier
        return [
            .text(key.provider), .text(state.account ?? ""), .text(key.providerPaymentID), Bind.int(state.orderID),
            Bind.text(state.merchantReference), Bind.int(state.amountMinor), Bind.text(state.currency),
            .int(state.refundedMinor), .text((state.status ?? .pending).rawValue), Bind.text(state.statusDetail),
            Bind.text(state.method), Bind.text(state.funding), Bind.date(state.providerUpdatedAt),
            .int(Int64(state.chargebacks)), .int(Int64(state.chargebackReversals)), .int(Int64(state.captureFailures)),
        ]
    }
}

/// The state columns of many payments, one binary array per column, in the order
/// `LedgerSQL.insertPayments` and `updatePayments` bind them after their keys.
private struct PaymentColumns {
    var account: PostgresArray
    var orderID: PostgresArray
    var merchantReference: PostgresArray
    var amountMinor: PostgresArray
    var currency: PostgresArray
    var refundedMinor: PostgresArray
    var status: PostgresArray
    var statusDetail: PostgresArray
    var method: PostgresArray
    var funding: PostgresArray
    var providerUpdatedAt: PostgresArray
    var chargebacks: PostgresArray
    var chargebackReversals: PostgresArray
    var captureFailures: PostgresArray

    init(capacity count: Int) {
        account = PostgresArray(.text, capacity: count * 8)
        orderID = PostgresArray(.int8, capacity: count * 12)
        merchantReference = PostgresArray(.text, capacity: count * 24)
        amountMinor = PostgresArray(.int8, capacity: count * 12)
        currency = PostgresArray(.text, capacity: count * 8)
        refundedMinor = PostgresArray(.int8, capacity: count * 12)
        status = PostgresArray(.text, capacity: count * 16)
        statusDetail = PostgresArray(.text, capacity: count * 16)
        method = PostgresArray(.text, capacity: count * 12)
        funding = PostgresArray(.text, capacity: count * 12)
        providerUpdatedAt = PostgresArray(.timestamptz, capacity: count * 12)
        chargebacks = PostgresArray(.int8, capacity: count * 12)
        chargebackReversals = PostgresArray(.int8, capacity: count * 12)
        captureFailures = PostgresArray(.int8, capacity: count * 12)
    }

    mutating func append(_ state: PaymentState) throws(PostgresError) {
        try account.append(state.account ?? "")
        try orderID.appendOptional(state.orderID)
        try merchantReference.append(state.merchantReference)
        try amountMinor.appendOptional(state.amountMinor)
        try currency.append(state.currency)
        try refundedMinor.append(state.refundedMinor)
        try status.append((state.status ?? .pending).rawValue)
        try statusDetail.append(state.statusDetail)
        try method.append(state.method)
        try funding.append(state.funding)
        if let date = state.providerUpdatedAt { try providerUpdatedAt.append(date) } else { providerUpdatedAt.appendNull() }
        try chargebacks.append(Int64(state.chargebacks))
        try chargebackReversals.append(Int64(state.chargebackReversals))
        try captureFailures.append(Int64(state.captureFailures))
    }

    var binds: [PostgresValue] {
        [account, orderID, merchantReference, amountMinor, currency, refundedMinor, status, statusDetail, method, funding,
         providerUpdatedAt, chargebacks, chargebackReversals, captureFailures].map(PostgresValue.array)
    }
}

private extension PostgresArray {
    mutating func appendOptional(_ number: Int64?) throws(PostgresError) {
        if let number { try append(number) } else { appendNull() }
    }
}
