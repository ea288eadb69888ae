package import PayhookCore
import PayhookPostgres

/// Why an operator action (CLI or admin API: dead letters, orders, subscriptions) could not be
/// carried out.
///
/// The `code` is stable (scripts and the admin API's clients match on it); the message says what
/// to do and never contains secrets or delivery bodies.
package struct OperationsError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable {
        /// An id names no dead letter (or no row of the kind asked for).
        case notFound = "not_found"
        /// An argument or body field is missing or malformed; `field` names it.
        case invalidArgument = "invalid_argument"
        /// The dead letter points at an inbound event or job that no longer exists.
        case sourceMissing = "source_missing"
        /// The request clashes with existing state (e.g. an order registered with other values).
        case conflict = "conflict"
        /// Well-formed, but a rule refuses it (e.g. a subscription starting more than a day ago,
        /// which would charge every back cycle at once); `field` names the field.
        case unprocessable = "unprocessable"
        /// The database refused or could not be reached; nothing was changed by this call.
        case databaseUnavailable = "database_unavailable"
        /// A provider's API, asked to confirm something, failed or could not be reached; nothing
        /// was changed by this call.
        case providerUnavailable = "provider_unavailable"
    }

    package let code: Code
    package let message: String
    /// The argument or JSON field at fault, for `invalid_argument` and `unprocessable`.
    package let field: String?

    package init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    package static func invalid(_ field: String, _ message: String) -> OperationsError {
        OperationsError(.invalidArgument, message, field: field)
    }

    package var description: String { message }

    /// The admin API's status for this error.
    package var httpStatus: Int {
        switch code {
        case .invalidArgument: 400
        case .notFound: 404
        case .sourceMissing, .conflict: 409
        case .unprocessable: 422
        case .databaseUnavailable: 503
        case .providerUnavailable: 502
        }
    }

    /// The admin API's error body: `{"code": …, "message": …, "field": …}`.
    package var json: JSONOutput {
        var members: [JSONOutput.Member] = [.init("code", .string(code.rawValue)), .init("message", .string(message))]
        if let field { members.append(.init("field", .string(field))) }
        return .object(members)
    }

    /// Wraps anything that is not already an `OperationsError` as a database failure; the
    /// Postgres error text names no bind values, so it is safe to show.
    package static func wrapping(_ error: any Error) -> OperationsError {
        if let error = error as? OperationsError { return error }
        // The usual cause at the command line: DATABASE_URL names a database nobody migrated.
        if let error = error as? PostgresError, error.kind == .undefinedTable {
            return OperationsError(.databaseUnavailable, "database error: \(error); is the schema migrated? run `payhook migrate`")
        }
        return OperationsError(.databaseUnavailable, "database error: \(error)")
    }
}
