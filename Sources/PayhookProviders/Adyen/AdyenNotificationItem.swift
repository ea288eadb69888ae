import PayhookCore

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
    var signingString: String { String(decoding: signingBytes, as: UTF8.self) }

    /// `signingString`'s bytes, written into one buffer: every delivery's items are signed, and
    /// an array of fields joined into a String, then copied into bytes, cost three allocations.
    var signingBytes: [UInt8] {
        Self.joined([pspReference, originalReference, merchantAccountCode, merchantReference,
                     value, currency, eventCode, success])
    }

    /// `pspReference:eventCode:success:originalReference`; a modification and its original
    /// payment share a pspReference only through `originalReference`, so it stays in the key.
    var dedupComponent: String {
        String(decoding: Self.joined([pspReference, eventCode, success, originalReference]), as: UTF8.self)
    }

    /// `fields` joined by `:` into one buffer sized up front.
    private static func joined(_ fields: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(fields.count) { $0 + $1.utf8.count })
        for (index, field) in fields.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ":")) }
            bytes.append(contentsOf: field.utf8)
        }
        return bytes
    }
}
