import Foundation
import PayhookCore
import PayhookPostgres

/// What the applier carries from one event to the next while it applies a run of events inside
/// one savepoint: the payment rows as this transaction holds them, and the history rows not
/// written yet.
///
/// Why: applying an event cost three round trips to PostgreSQL (read its payment, write it,
/// write its history row), and on a machine that also runs PostgreSQL the round trips' wake-ups,
/// more than the statements' own work, bounded processing (bench/end-to-end). A pass reads
/// every payment its events name in one statement, keeps each row current from what the
/// payment writes return (the same columns, so the row kept is the row a read would return),
/// and writes all its history rows in one statement at its end: one round trip per event.
///
/// A pass is valid only inside its savepoint: after a rollback to it, what the pass holds no
/// longer matches the database, and the caller starts a new pass.
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

    /// One `payment_events` row, written when the pass ends.
    struct HistoryRow {
        let paymentID: Int64?
        let orderID: Int64?
        let tokenID: Int64?
        let inboundEventID: Int64
        let type: String
        let occurredAt: Date
        let data: String
    }

    /// Payment rows this pass has read or written. `.some(nil)`: read, and absent. A key not
    /// here has not been read in this pass, so the database must be asked.
    private var payments: [PaymentKey: CanonicalEventApplier.StoredPayment?] = [:]
    private var history: [HistoryRow] = []

    /// The payment as this transaction holds it, if this pass knows it: `nil` when it must be
    /// read, `.some(nil)` when it is known not to exist.
    func payment(_ key: PaymentKey) -> CanonicalEventApplier.StoredPayment?? { payments[key] }

    mutating func remember(_ payment: CanonicalEventApplier.StoredPayment?, for key: PaymentKey) {
        payments[key] = .some(payment)
    }

    mutating func append(_ row: HistoryRow) { history.append(row) }

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
            payments[key] = .some(try CanonicalEventApplier.StoredPayment(row: row))
        }
    }

    /// Writes the history rows appended since the last call, in the order they were appended
    /// (their ids follow that order).
    mutating func writeHistory(on connection: PostgresConnection) async throws {
        guard !history.isEmpty else { return }
        var paymentIDs = PostgresArray(.int8, capacity: history.count * 12)
        var orderIDs = PostgresArray(.int8, capacity: history.count * 12)
        var tokenIDs = PostgresArray(.int8, capacity: history.count * 12)
        var inboundIDs = PostgresArray(.int8, capacity: history.count * 12)
        var types = PostgresArray(.text, capacity: history.count * 24)
        var times = PostgresArray(.timestamptz, capacity: history.count * 12)
        var data = PostgresArray(.jsonb, capacity: history.count * 256)
        func append(_ id: Int64?, to array: inout PostgresArray) throws {
            if let id { try array.append(id) } else { array.appendNull() }
        }
        for row in history {
            try append(row.paymentID, to: &paymentIDs)
            try append(row.orderID, to: &orderIDs)
            try append(row.tokenID, to: &tokenIDs)
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
}
