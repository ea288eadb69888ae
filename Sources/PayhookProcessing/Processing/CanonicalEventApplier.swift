import Foundation
import PayhookCore
import PayhookLedger
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

    static func text(_ value: String?) -> PostgresValue { value.map(PostgresValue.text) ?? .null }
    static func int(_ value: Int64?) -> PostgresValue { value.map(PostgresValue.int) ?? .null }
    static func date(_ value: Date?) -> PostgresValue { value.map(PostgresValue.timestamptz) ?? .null }
}
