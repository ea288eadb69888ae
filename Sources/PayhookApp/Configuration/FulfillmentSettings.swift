import Foundation
/// How payhook decides that an order is paid and tells the merchant.
public struct FulfillmentSettings: Sendable, Equatable {
    /// Count `authorized` payments as paid (`PAYHOOK_FULFILL_ON_AUTHORIZED=true`); by default
    /// only `captured` money fulfills, because an authorisation can still be cancelled or expire.
    public var fulfillOnAuthorized = false
    /// Funding types that may fulfill (`PAYHOOK_FULFILLMENT_FUNDING=credit,debit`); `nil`
    /// allows any, including payments whose funding the provider did not report.
    public var allowedFunding: Set<String>?
    /// Deadline of one callback POST (`PAYHOOK_FULFILLMENT_TIMEOUT_SECONDS`, default 10).
    public var callbackTimeout: Duration = .seconds(10)

    public init() {}

    /// The canonical payment statuses that count as money received.
    var paidStatuses: [String] { fulfillOnAuthorized ? ["captured", "authorized"] : ["captured"] }
}

extension EnvironmentReader {
    mutating func fulfillmentSettings() -> FulfillmentSettings {
        var settings = FulfillmentSettings()
        settings.fulfillOnAuthorized = boolean("PAYHOOK_FULFILL_ON_AUTHORIZED", default: false)
        if let text = string("PAYHOOK_FULFILLMENT_FUNDING") {
            let types = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if types.contains(where: \.isEmpty) || types.contains(where: { !$0.allSatisfy { $0.isLetter || $0 == "_" } }) {
                problem("PAYHOOK_FULFILLMENT_FUNDING", "must be a comma-separated list of funding types, e.g. credit,debit")
            } else {
                settings.allowedFunding = Set(types)
            }
        }
        settings.callbackTimeout = .seconds(integer("PAYHOOK_FULFILLMENT_TIMEOUT_SECONDS", default: 10, range: 1...300))
        return settings
    }

    mutating func boolean(_ name: String, default value: Bool) -> Bool {
        guard let text = string(name) else { return value }
        switch text.lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default:
            problem(name, "must be true or false")
            return value
        }
    }
}
