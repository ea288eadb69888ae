import Foundation
import PayhookCore
import PayhookLedger
import PayhookPostgres

/// Orders, and the bare order a payment names before it arrives.
extension CanonicalEventApplier {
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
                try await connection.query(LedgerSQL.shared.updateOrder, [
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
            let rows = try await connection.query(LedgerSQL.shared.insertOrder, [
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
    func ensureOrder(provider: String, providerOrderID: String, account: String,
                             on connection: PostgresConnection) async throws -> Int64? {
        let rows = try await connection.query(ProcessingSQL.shared.selectOrderForUpdate, [.text(provider), .text(providerOrderID)])
        if let id = try rows.rows.first?.decode("id", as: Int64.self) { return id }
        let inserted = try await connection.query(LedgerSQL.shared.insertOrder, [
            .text(provider), .text(account), .text(providerOrderID), .null, .null, .null, .text("created"), .null,
        ])
        return try inserted.rows.first?.decode("id", as: Int64.self)
    }
}
