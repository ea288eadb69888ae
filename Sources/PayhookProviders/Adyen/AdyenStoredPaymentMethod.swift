import Foundation
public import PayhookCore

/// One `StoredPaymentMethodResource` of Adyen's `GET /storedPaymentMethods` answer (official
/// Node library `src/typings/checkout/storedPaymentMethodResource.ts`): the token and its
/// display data. The holder's name, email and IBAN are never read.
public struct AdyenStoredPaymentMethod: Sendable, Equatable {
    /// The token (`id`, the `storedPaymentMethodId` charges send) with its brand, last four
    /// digits and expiry.
    public let token: VaultTokenSnapshot
    /// `supportedRecurringProcessingModels` (`Subscription`, `CardOnFile`,
    /// `UnscheduledCardOnFile`); nil when the answer does not say.
    public let recurringProcessingModels: [String]?

    /// Whether payhook's charges (`recurringProcessingModel: Subscription`) may use it: yes
    /// unless Adyen lists the models and `Subscription` is not among them.
    public var supportsSubscriptions: Bool { recurringProcessingModels?.contains("Subscription") ?? true }

    /// Decodes `{"merchantAccount", "shopperReference", "storedPaymentMethods": [...]}`; a
    /// missing list is empty.
    /// - Throws: ``PayloadError`` when the body is not a JSON object or an entry has no `id`.
    static func decodeList(_ json: [UInt8], merchantAccount: String) throws(PayloadError) -> [AdyenStoredPaymentMethod] {
        let root = try PayloadNode.parse(json, provider: .adyen)
        let shopper = try root["shopperReference"].string()
        var methods: [AdyenStoredPaymentMethod] = []
        for entry in try root["storedPaymentMethods"].elements() {
            let expiry = try entry.cardExpiry(month: "expiryMonth", year: "expiryYear")
            let token = VaultTokenSnapshot(
                provider: .adyen, account: try root["merchantAccount"].string() ?? merchantAccount,
                token: try entry["id"].requiredString(), shopperReference: try entry["shopperReference"].string() ?? shopper,
                brand: try entry["brand"].string(), last4: try entry["lastFour"].string(),
                expiry: expiry,
                status: .active)
            var models: [String]?
            if entry["supportedRecurringProcessingModels"].isPresent {
                var listed: [String] = []
                for model in try entry["supportedRecurringProcessingModels"].elements() {
                    if let name = try model.string() { listed.append(name) }
                }
                models = listed
            }
            methods.append(AdyenStoredPaymentMethod(token: token, recurringProcessingModels: models))
        }
        return methods
    }
}
