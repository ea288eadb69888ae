package import PayhookCore

/// Reading admin API request bodies (and the CLI's equivalents): one JSON parser for all of
/// them, `JSONValue`, which keeps JSON's types apart (`true` is not `1`, `19.99` is not an
/// integer) and refuses duplicate keys. Errors name the field, as the routes' do.
package enum AdminBody {
    /// The body as one JSON object, or nil.
    package static func object(_ body: [UInt8]) -> JSONObject? {
        guard case .object(let object)? = JSONValue.parse(body) else { return nil }
        return object
    }

    /// True for a body of only whitespace.
    static func isBlank(_ body: [UInt8]) -> Bool {
        body.allSatisfy { $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }
    }

    /// `{"value": <integer minor units > 0>, "currency": "<ISO 4217>"}`; decimals are refused,
    /// never rounded.
    package static func money(_ value: JSONValue?, field: String = "amount") throws(OperationsError) -> Money {
        guard case .object(let amount)? = value else {
            throw .invalid(field, "\(field) is required: {\"value\": <integer minor units>, \"currency\": \"EUR\"}")
        }
        for key in amount.keys where key != "value" && key != "currency" {
            throw .invalid("\(field).\(key)", "unknown field \(field).\(key); known: value, currency")
        }
        guard let minor = amount["value"]?.exactInteger, minor > 0 else {
            throw .invalid("\(field).value", "\(field).value must be a positive integer in minor units (1999 for 19.99)")
        }
        guard case .string(let currency)? = amount["currency"], currency.count == 3,
              currency.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            throw .invalid("\(field).currency", "\(field).currency must be an ISO 4217 code such as EUR")
        }
        do {
            return try Money(minorUnits: minor, currency: currency)
        } catch {
            throw .invalid("\(field).currency", "\(error)")
        }
    }
}
