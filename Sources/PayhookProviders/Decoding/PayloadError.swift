public import PayhookCore

/// Why a provider payload could not be decoded into canonical events.
///
/// Errors name the provider and the field's path (`notificationItems[0].NotificationRequestItem.pspReference`)
/// and never the body text or any value: payloads carry personal data, and error text ends up
/// in `inbound_events.last_error`, logs and the dead-letter CLI. Unknown event types are not
/// errors; they decode to ``CanonicalEvent/unknown(provider:eventType:reference:)``.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Not a JSON document, or not the JSON object the provider sends.
        case malformedJSON = "malformed_json"
        /// A field payhook cannot do without is absent, null or empty.
        case missingField = "missing_field"
        /// A field has the wrong JSON type or an unparseable value (an amount with too many
        /// decimals, a currency that is not ISO 4217).
        case invalidField = "invalid_field"
        /// A status word in fetched state that no mapping table knows; retried and then
        /// dead-lettered so that an operator looks, rather than guessed.
        case unrecognizedValue = "unrecognized_value"
        /// An amount with more decimal places than its currency's minor unit (`"1000.50"` in
        /// CLP, whose exponent is 0): refused, because rounding would change the money.
        case unrepresentableAmount = "unrepresentable_amount"
        /// No currency can be told for the amounts: the payload names none and nothing
        /// configured or documented supplies one (Mercado Pago orders carry none).
        case unknownCurrency = "unknown_currency"
    }

    public let provider: ProviderID
    public let code: Code
    /// Path of the offending field; `nil` for ``Code/malformedJSON``.
    public let field: String?

    public init(provider: ProviderID, code: Code, field: String? = nil) {
        self.provider = provider
        self.code = code
        self.field = field
    }

    public var description: String {
        switch code {
        case .malformedJSON: "\(provider.rawValue) payload is not a well-formed JSON object"
        case .missingField: "\(provider.rawValue) payload is missing required field \(field ?? "?")"
        case .invalidField: "\(provider.rawValue) payload has an invalid value in field \(field ?? "?")"
        case .unrecognizedValue: "\(provider.rawValue) payload has a value no mapping knows in field \(field ?? "?")"
        case .unrepresentableAmount:
            "\(provider.rawValue) payload has an amount with more decimal places than its currency allows in field \(field ?? "?") (refused, never rounded)"
        case .unknownCurrency:
            "\(provider.rawValue) payload names no currency and its \(field ?? "?") names no known site; set the account's currency in configuration"
        }
    }
}
