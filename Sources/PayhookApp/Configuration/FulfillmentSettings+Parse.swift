import Foundation
import PayhookIngress
import PayhookHTTP
import PayhookProcessing
import PayhookCallbacks

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
        if let text = string("PAYHOOK_CALLBACK_ALLOWED_CIDRS") {
            switch AddressAllowList.parse(text) {
            case .success(let networks): settings.callbackDestinations = CallbackDestinationPolicy(allowed: networks)
            case .failure(let failure): problem("PAYHOOK_CALLBACK_ALLOWED_CIDRS", failure.message)
            }
        }
        settings.reviewAfter = .seconds(integer("PAYHOOK_FULFILLMENT_REVIEW_AFTER_SECONDS", default: 1020, range: 0...604_800))
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
