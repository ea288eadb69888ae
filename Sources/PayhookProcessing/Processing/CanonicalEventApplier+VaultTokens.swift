import Foundation
import PayhookCore
import PayhookLedger
import PayhookPostgres

/// Vault tokens.
extension CanonicalEventApplier {
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
}
