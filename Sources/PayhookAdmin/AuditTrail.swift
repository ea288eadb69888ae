package import Foundation
package import PayhookPostgres

/// Appends operator actions to `audit_log`.
package enum AuditTrail {
    static let insert = "INSERT INTO audit_log (actor, action, target, details) VALUES ($1, $2, $3, $4)"

    /// Writes one audit row on `connection`, inside the caller's transaction when there is one.
    package static func record(
        on connection: PostgresConnection, actor: String, action: String, target: String, details: [JSONOutput.Member]
    ) async throws {
        try await connection.query(insert, [
            .text(actor), .text(action), .text(target), .jsonb(JSONOutput.object(details).rendered),
        ])
    }
}
