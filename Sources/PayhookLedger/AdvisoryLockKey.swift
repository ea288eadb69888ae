import PayhookCore
package import PayhookPostgres

/// A business key whose transaction-scoped advisory lock serializes every writer of one
/// payment, order, vault token or merchant reference: the processor, order registration,
/// fulfillment and charge settlement.
///
/// Why a type: two writers of the same row must hash the same text, so each key's spelling
/// lives here once; a writer that spelled `"payment:…"` its own way would lock nothing the
/// others hold.
package struct AdvisoryLockKey: Hashable, Sendable {
    /// The text `LedgerSQL.lockKeys` hashes; part of no stored data, but every running
    /// process must agree on it, so it changes only with every process at once.
    package let text: String

    private init(_ text: String) { self.text = text }

    /// A provider payment (`payments.provider_payment_id`).
    package static func payment(provider: String, id: String) -> AdvisoryLockKey { .init("payment:\(provider):\(id)") }
    /// A provider order (`orders.provider_order_id`).
    package static func order(provider: String, id: String) -> AdvisoryLockKey { .init("order:\(provider):\(id)") }
    /// A stored payment method (`vault_tokens.token`).
    package static func token(provider: String, token: String) -> AdvisoryLockKey { .init("token:\(provider):\(token)") }
    /// A merchant reference: processing and order registration link payments to orders by it.
    package static func reference(provider: String, merchantReference: String) -> AdvisoryLockKey {
        .init("reference:\(provider):\(merchantReference)")
    }

    /// Takes the locks of `keys` on `connection` until its transaction ends, in one sorted order
    /// (`LedgerSQL.lockKeys`), so two writers never wait on each other in a cycle.
    package static func lock(_ keys: [AdvisoryLockKey], on connection: PostgresConnection) async throws(PostgresError) {
        try await connection.query(LedgerSQL.shared.lockKeys, [.jsonb(JSONString.array(keys.map(\.text)))])
    }
}
