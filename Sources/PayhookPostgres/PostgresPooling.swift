/// What stands between payhook and PostgreSQL, as far as server sessions go
/// (`PAYHOOK_DATABASE_POOLING`).
///
/// Why it matters: PgBouncer in transaction mode gives each transaction (and each statement
/// outside one) whichever server session is free, so anything a client leaves in a session
/// (a prepared statement, a `SET`, a session advisory lock, a `LISTEN`) may belong to another
/// client by the next statement. Debian 12's PgBouncer is 1.18, which does not track
/// protocol-level prepared statements (docs/decisions/0010-statement-names-and-transaction-pooling.md).
public enum PostgresPooling: String, Sendable, CaseIterable {
    /// Each connection keeps one server session (direct, or a session-mode pooler): statements
    /// are prepared once per session, under names derived from their SQL and parameter types.
    case session
    /// A transaction-mode pooler: statements run unnamed (Parse, Bind, Execute in one message
    /// batch), and nothing relies on the server session outliving a transaction.
    case transaction
}
