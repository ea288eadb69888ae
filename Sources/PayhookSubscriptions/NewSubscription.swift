package import Foundation
package import PayhookCore
import PayhookProviders
package import PayhookAdmin

/// A validated `POST /v1/subscriptions` body (the CLI's `subscriptions create` builds the same).
///
/// ```json
/// {"vault_token": {"provider": "adyen", "token": "<storedPaymentMethodId>"},
///  "amount": {"value": 1999, "currency": "EUR"}, "interval": {"every": 1, "unit": "month"},
///  "start_at": "2025-01-31T09:00:00Z", "reference": "sub-42", "max_cycles": null}
/// ```
/// `vault_token_id` may replace `vault_token`; `start_at` defaults to now (the first cycle is
/// due at the start); `end_at` (optional) ends the schedule after the last cycle due at or
/// before it; `actor` (optional) names who acts in `audit_log`.
package struct NewSubscription: Sendable, Equatable {
    package enum TokenReference: Sendable, Equatable {
        case id(Int64)
        case provider(ProviderID, token: String)
    }

    var token: TokenReference
    var amount: Money
    var interval: SubscriptionInterval
    /// Whole seconds: due dates are computed from it, and operators read them.
    var startAt: Date
    var reference: String
    var maxCycles: Int?
    var endAt: Date?
    var actor: String?

    static let knownFields = ["vault_token", "vault_token_id", "amount", "interval", "start_at", "reference",
                              "max_cycles", "end_at", "actor"]

    /// Validates a body; every error names the field at fault.
    /// How far in the past `start_at` may lie.
    static let maxStartAgo: TimeInterval = 86_400

    /// - Parameter now: the default `start_at`, and what "in the past" is measured from.
    static func parse(_ body: [UInt8], now: Date) throws(OperationsError) -> NewSubscription {
        guard let object = AdminBody.object(body) else {
            throw .invalid("body", "the body must be a JSON object with vault_token, amount, interval and reference")
        }
        return try parse(object, now: now)
    }

    package static func parse(_ object: JSONObject, now: Date) throws(OperationsError) -> NewSubscription {
        for key in object.keys.sorted() where !knownFields.contains(key) {
            throw .invalid(key, "unknown field \(key); known: \(knownFields.joined(separator: ", "))")
        }
        let token = try tokenReference(object)

        let money = try AdminBody.money(object["amount"])

        guard case .object(let intervalObject)? = object["interval"] else {
            throw .invalid("interval", "interval must be an object such as {\"every\": 1, \"unit\": \"month\"}")
        }
        for key in intervalObject.keys.sorted() where key != "every" && key != "unit" {
            throw .invalid("interval.\(key)", "unknown field interval.\(key); known: every, unit")
        }
        guard case .string(let unitText)? = intervalObject["unit"], let unit = SubscriptionInterval.Unit(rawValue: unitText) else {
            throw .invalid("interval.unit", "interval.unit must be day, week or month")
        }
        let maximum = SubscriptionInterval.maximumEvery[unit] ?? 1
        guard let every = intervalObject["every"]?.exactInteger, every >= 1, every <= maximum,
              let interval = SubscriptionInterval(every: Int(every), unit: unit)
        else {
            throw .invalid("interval.every", "interval.every must be an integer from 1 to \(maximum) for unit \(unit.rawValue)")
        }

        let startAt: Date
        switch object["start_at"] {
        case nil, .null?: startAt = now
        case .string(let text)?:
            guard let date = parseTimestamp(text) else {
                throw .invalid("start_at", "start_at must be an ISO 8601 time with an offset, e.g. 2025-01-31T09:00:00Z")
            }
            startAt = date
        default:
            throw .invalid("start_at", "start_at must be an ISO 8601 time with an offset, e.g. 2025-01-31T09:00:00Z")
        }
        // Every cycle due since start_at would be charged at once: a monthly plan dated a year
        // back makes 13 charges in one scheduler pass. A day of slack covers clocks and queues.
        guard startAt >= now.addingTimeInterval(-maxStartAgo) else {
            throw OperationsError(.unprocessable, "start_at is more than 24 hours in the past; every cycle since then would be charged at once. Start it now or later", field: "start_at")
        }

        guard case .string(let reference)? = object["reference"],
              !reference.trimmingCharacters(in: .whitespaces).isEmpty, reference.count <= 200,
              !reference.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f })
        else {
            throw .invalid("reference", "reference must be a non-empty string of at most 200 printable characters, unique per subscription")
        }

        var maxCycles: Int?
        switch object["max_cycles"] {
        case nil, .null?: break
        case let value?:
            guard let count = value.exactInteger, count > 0, count <= 1_000_000 else {
                throw .invalid("max_cycles", "max_cycles must be null or an integer from 1 to 1000000")
            }
            maxCycles = Int(count)
        }

        var endAt: Date?
        switch object["end_at"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let date = parseTimestamp(text) else { throw .invalid("end_at", "end_at must be an ISO 8601 time with an offset") }
            endAt = date
        default: throw .invalid("end_at", "end_at must be null or an ISO 8601 time with an offset")
        }
        let start = Date(timeIntervalSince1970: startAt.timeIntervalSince1970.rounded(.down))
        if let endAt, endAt < start { throw .invalid("end_at", "end_at must not be before start_at") }

        var actor: String?
        switch object["actor"] {
        case nil, .null?: break
        case .string(let text)? where !text.isEmpty && text.count <= 200: actor = text
        default: throw .invalid("actor", "actor must be a non-empty string")
        }

        return NewSubscription(token: token, amount: money, interval: interval, startAt: start, reference: reference,
                               maxCycles: maxCycles, endAt: endAt, actor: actor)
    }

    private static func tokenReference(_ object: JSONObject) throws(OperationsError) -> TokenReference {
        switch (object["vault_token"], object["vault_token_id"]) {
        case (.some, .some):
            throw .invalid("vault_token", "give vault_token or vault_token_id, not both")
        case (nil, nil), (.null?, nil), (nil, .null?):
            throw .invalid("vault_token", "vault_token ({\"provider\": \"adyen\", \"token\": \"…\"}) or vault_token_id is required")
        case (nil, let value?):
            guard let id = value.exactInteger, id > 0 else {
                throw .invalid("vault_token_id", "vault_token_id must be a positive integer")
            }
            return .id(id)
        case (.object(let token)?, nil):
            for key in token.keys.sorted() where key != "provider" && key != "token" {
                throw .invalid("vault_token.\(key)", "unknown field vault_token.\(key); known: provider, token")
            }
            guard case .string(let providerText)? = token["provider"], let provider = ProviderID(rawValue: providerText) else {
                throw .invalid("vault_token.provider",
                               "vault_token.provider must be one of \(ProviderID.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard case .string(let value)? = token["token"], !value.isEmpty, value.count <= 500 else {
                throw .invalid("vault_token.token", "vault_token.token must be the provider's token, a non-empty string")
            }
            return .provider(provider, token: value)
        case (_?, nil):
            throw .invalid("vault_token", "vault_token must be an object such as {\"provider\": \"adyen\", \"token\": \"…\"}")
        }
    }

    /// ISO 8601 with a zone (`Z` or an offset), with or without fractional seconds.
    static func parseTimestamp(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle())
    }
}
