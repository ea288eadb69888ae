import Foundation
package import PayhookPostgres
package import PayhookCore

/// Appends operator actions to `audit_log`.
package enum AuditTrail {
    /// Writes one audit row on `connection`, inside the caller's transaction when there is one.
    /// `actor` is who was authenticated; `actorNote` a name the caller gave, unchecked.
    package static func record(
        on connection: PostgresConnection, actor: String, actorNote: String? = nil, action: String, target: String,
        details: [JSONOutput.Member]
    ) async throws {
        try await connection.query(AuditSQL.shared.insert, [
            .text(actor), actorNote.map { PostgresValue.text($0) } ?? .null, .text(action), .text(target), .jsonb(JSONOutput.object(details).rendered),
        ])
    }

    /// The row of an operation done `by` an operator: its actor and its note, so no caller can
    /// write one without the other.
    package static func record(
        on connection: PostgresConnection, by operatorAction: OperatorAction, action: String, target: String,
        details: [JSONOutput.Member]
    ) async throws {
        try await record(on: connection, actor: operatorAction.actor, actorNote: operatorAction.actorNote, action: action,
                         target: target, details: details)
    }
}

/// The audit trail's one statement.
package struct AuditSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = AuditSQL()

    let insert = "INSERT INTO audit_log (actor, actor_note, action, target, details) VALUES ($1, $2, $3, $4, $5)"
}
