import Foundation

/// A database failure, classified by SQLSTATE so callers can react without parsing text.
///
/// The description carries the SQLSTATE and the server's primary message only. The server's
/// DETAIL line is never kept because it echoes row values (`Key (email)=(a@b.c) already
/// exists`), and bind values are never included, so an error is safe to log. For data
/// exceptions (SQLSTATE class 22), whose primary message quotes the offending input
/// (`invalid input syntax for type integer: "…"`), the quoted part is cut off as well.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as far as a caller needs to decide what to do next.
    public enum Kind: Sendable, Hashable {
        /// Could not connect (server down, bad conninfo, auth). Retryable.
        case connectionFailed
        /// The connection died during or before a command (server restart, network). Retryable;
        /// the command may or may not have been applied.
        case connectionLost
        /// 23505. `constraint` names the violated constraint.
        case uniqueViolation
        /// 23503.
        case foreignKeyViolation
        /// 23514.
        case checkViolation
        /// 23502.
        case notNullViolation
        /// 40001. Retry the whole transaction.
        case serializationFailure
        /// 40P01. Retry the whole transaction.
        case deadlockDetected
        /// 57014: statement timeout or cancel request.
        case queryCanceled
        /// 55P03: `NOWAIT` / `lock_timeout`.
        case lockNotAvailable
        /// 42P01.
        case undefinedTable
        /// 42601.
        case syntaxError
        /// A result value could not be decoded into the requested Swift type.
        case decoding
        /// The pool was closed.
        case poolClosed
        /// No pooled connection became free within the acquire timeout.
        case poolTimeout
        /// A migration file is malformed, edited after it was applied, or failed to apply.
        case migration
        /// Anything else; inspect `sqlState`.
        case other
    }

    /// The classification.
    public let kind: Kind
    /// The five-character SQLSTATE when the server reported one.
    public let sqlState: String?
    /// The server's primary message (or libpq's / this module's), without DETAIL or values.
    public let message: String
    /// The violated constraint's name, for integrity violations.
    public let constraint: String?

    /// Creates an error; `message` must not contain bind values or row data.
    public init(kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
    }

    /// True when retrying (a new transaction, or a new connection) can succeed:
    /// serialization failures, deadlocks, and lost or failed connections.
    public var isRetryable: Bool {
        switch kind {
        case .serializationFailure, .deadlockDetected, .connectionLost, .connectionFailed: true
        default: false
        }
    }

    /// `postgres uniqueViolation (SQLSTATE 23505): duplicate key value violates unique constraint "x"`.
    public var description: String {
        var text = "postgres \(kind)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        return text + ": " + message
    }

    /// Classifies a server-reported error.
    /// - Parameter connectionBad: libpq reports the connection as dead after the command.
    static func server(sqlState: String?, primaryMessage: String, constraint: String?,
                       connectionBad: Bool) -> PostgresError {
        let kind = connectionBad ? Kind.connectionLost : kind(forSQLState: sqlState)
        return PostgresError(kind: kind, sqlState: sqlState,
                             message: redacted(primaryMessage, sqlState: sqlState), constraint: constraint)
    }

    static func kind(forSQLState sqlState: String?) -> Kind {
        guard let sqlState else { return .other }
        switch sqlState {
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "23514": return .checkViolation
        case "23502": return .notNullViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlockDetected
        case "57014": return .queryCanceled
        case "55P03": return .lockNotAvailable
        case "42P01": return .undefinedTable
        case "42601": return .syntaxError
        // admin_shutdown, crash_shutdown, cannot_connect_now: the session is gone.
        case "57P01", "57P02", "57P03": return .connectionLost
        // read_only_sql_transaction: the session is on a server that cannot write (a standby, or
        // an old primary after a failover). It is of no use to this client, so it counts as lost:
        // the connection is discarded, and the next one follows the URL to the primary.
        case "25006": return .connectionLost
        // 08P01 (protocol violation) is also what a wrong bind count produces; the session survives.
        case "08P01": return .other
        default: return sqlState.hasPrefix("08") ? .connectionLost : .other
        }
    }

    /// Class 22 messages quote the offending input (`value "…" is out of range for type
    /// integer`); everything from the first to the last double quote is replaced, so a value
    /// containing quotes cannot escape the redaction.
    static func redacted(_ message: String, sqlState: String?) -> String {
        let trimmed = message.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let sqlState, sqlState.hasPrefix("22"),
              let first = trimmed.firstIndex(of: "\""), let last = trimmed.lastIndex(of: "\""), first < last
        else { return trimmed }
        return String(trimmed[..<first]) + "\"<redacted>\"" + String(trimmed[trimmed.index(after: last)...])
    }
}
