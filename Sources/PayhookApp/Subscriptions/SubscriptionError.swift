/// Why a subscription operation (admin API or CLI) was refused or failed.
///
/// Rendered like the dead-letter API's errors, `{"code": …, "message": …, "field": …}`, with a
/// stable `code`; `field` names the JSON body field (dotted: `amount.value`) or path segment at
/// fault. Messages never contain tokens' secrets, credentials or bind values.
struct SubscriptionError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: String, Sendable {
        /// A field is missing or malformed, or names something unusable (a disabled token): 400.
        case invalidArgument = "invalid_argument"
        /// The subscription or vault token does not exist: 404.
        case notFound = "not_found"
        /// The request conflicts with stored state: a reference already used, or an action the
        /// subscription's status does not allow (resuming a canceled one): 409.
        case conflict
        /// The database refused or could not be reached: 503.
        case databaseUnavailable = "database_unavailable"
    }

    let code: Code
    let message: String
    let field: String?

    init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    static func invalid(_ field: String, _ message: String) -> SubscriptionError {
        SubscriptionError(.invalidArgument, message, field: field)
    }

    var description: String { message }

    var httpStatus: Int {
        switch code {
        case .invalidArgument: 400
        case .notFound: 404
        case .conflict: 409
        case .databaseUnavailable: 503
        }
    }

    var json: JSONDocument {
        var members: [JSONDocument.Member] = [.init("code", .string(code.rawValue)), .init("message", .string(message))]
        if let field { members.append(.init("field", .string(field))) }
        return .object(members)
    }

    /// Anything that is not already a `SubscriptionError` becomes a database failure; Postgres
    /// error texts name no bind values.
    static func wrapping(_ error: any Error) -> SubscriptionError {
        if let error = error as? SubscriptionError { return error }
        return SubscriptionError(.databaseUnavailable, "database error: \(error)")
    }
}
