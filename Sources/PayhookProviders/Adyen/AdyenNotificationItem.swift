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

    /// Reads `{"NotificationRequestItem": {...}}` at `element` of `document`; `nil` when the
    /// wrapper or item is not an object. Missing or null fields become empty strings, as
    /// Adyen's libraries do.
    init?(_ document: JSONDocument, _ element: JSONDocument.Node) {
        let item = document.member("NotificationRequestItem", of: element)
        guard document.isObject(element), document.isObject(item) else { return nil }
        func text(_ key: String, of node: JSONDocument.Node?) -> String {
            document.scalarText(document.member(key, of: node)) ?? ""
        }
        let amount = document.member("amount", of: item)
        pspReference = text("pspReference", of: item)
        originalReference = text("originalReference", of: item)
        merchantAccountCode = text("merchantAccountCode", of: item)
        merchantReference = text("merchantReference", of: item)
        value = text("value", of: amount)
        currency = text("currency", of: amount)
        eventCode = text("eventCode", of: item)
        success = text("success", of: item)
        hmacSignature = document.scalarText(document.member("hmacSignature", of: document.member("additionalData", of: item)))
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
