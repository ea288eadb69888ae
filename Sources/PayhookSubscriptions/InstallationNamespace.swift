import PayhookPostgres

/// This installation's prefix for provider idempotency keys (`ph<8 hex>`), created once, at
/// random, by migration 0011 and never changed. Read inside the transaction that creates the
/// keys, so it is always the database's own value, whichever process asks.
package enum InstallationNamespace {
    /// - Throws: `PostgresError`; a schema without the row (migrations not applied) is a
    ///   `.decoding` error naming the table.
    static func load(on connection: PostgresConnection) async throws -> String {
        guard let namespace = try await connection.query(SubscriptionSQL.shared.keyNamespace).rows.first?
            .decode("key_namespace", as: String.self) else {
            throw PostgresError(kind: .decoding, message: "table installation has no key_namespace row; run payhook migrate")
        }
        return namespace
    }
}
