import Foundation
package import PayhookPostgres
package import PayhookCore

/// Appends operator actions to `audit_log`.
package enum AuditTrail {
    /// Writes one audit row on `connection`, inside the caller's transaction when there is one.
    package static func record(
        on connection: PostgresConnection, actor: String, action: String, target: String, details: [JSONOutput.Member]
    ) async throws {
        try await connection.query(AuditSQL.shared.insert, [
            .text(actor), .text(action), .text(target), .jsonb(JSONOutput.object(details).rendered),
        ])
    }
}

/// The audit trail's one statement.
package struct AuditSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = AuditSQL()

    let insert = "INSERT INTO audit_log (actor, action, target, details) VALUES ($1, $2, $3, $4)"
}
