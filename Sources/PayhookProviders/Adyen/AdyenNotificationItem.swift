/// The signed fields of one standard-webhook `NotificationRequestItem`.
struct AdyenNotificationItem {
    let pspReference: String
    let originalReference: String
    let merchantAccountCode: String
    let merchantReference: String
    /// `amount.value` in minor units, as the digits that were sent.
    let value: String
    let currency: String
    let eventCode: String
    /// `true`/`false` as sent (Adyen sends a string; a JSON boolean gives the same text).
    let success: String
    /// Base64 from `additionalData.hmacSignature`, `nil` when absent.
    let hmacSignature: String?

    /// Reads `{"NotificationRequestItem": {...}}`; `nil` when the wrapper or item is not an
    /// object. Missing or null fields become empty strings, as Adyen's libraries do.
    init?(_ element: JSONValue) {
        guard case .object = element, let item = element["NotificationRequestItem"], case .object = item else {
            return nil
        }
        func text(_ value: JSONValue?) -> String { value?.scalarText ?? "" }
        pspReference = text(item["pspReference"])
        originalReference = text(item["originalReference"])
        merchantAccountCode = text(item["merchantAccountCode"])
        merchantReference = text(item["merchantReference"])
        value = text(item["amount"]?["value"])
        currency = text(item["amount"]?["currency"])
        eventCode = text(item["eventCode"])
        success = text(item["success"])
        hmacSignature = item["additionalData"]?["hmacSignature"]?.scalarText
    }

    /// The eight fields joined by `:` with no escaping: the exact bytes Adyen signs.
    var signingString: String {
        [pspReference, originalReference, merchantAccountCode, merchantReference,
         value, currency, eventCode, success].joined(separator: ":")
    }

    /// `pspReference:eventCode:success:originalReference`; a modification and its original
    /// payment share a pspReference only through `originalReference`, so it stays in the key.
    var dedupComponent: String {
        [pspReference, eventCode, success, originalReference].joined(separator: ":")
    }
}
