import Foundation
import PayhookCrypto
import PayhookProviders

/// Test keys. Each ring is "current,previous" so rotation can be exercised.
enum TestSecrets {
    static let mercadoPago = "mp-current-secret-0001"
    static let mercadoPagoPrevious = "mp-previous-secret-0000"
    static let adyen = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
    static let adyenPrevious = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
    /// The `acme-eu` account's own key (not in the default ring).
    static let adyenAcmeEU = "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"
    static let pxp = "pxp-current-key-0001"
    static let pxpPrevious = "pxp-previous-key-0000"
    static let adminToken = "admin-token-for-tests"

    /// The environment every in-process server and child starts from (listeners on port 0).
    static let environment: [String: String] = [
        "PAYHOOK_LISTEN": "127.0.0.1:0",
        "PAYHOOK_ADMIN_LISTEN": "127.0.0.1:0",
        "PAYHOOK_ADMIN_TOKEN": adminToken,
        "PAYHOOK_MERCADOPAGO_SECRETS": "\(mercadoPago),\(mercadoPagoPrevious)",
        "PAYHOOK_MERCADOPAGO_STALE_TS": "reject",
        "PAYHOOK_ADYEN_HMAC_KEYS": "\(adyen),\(adyenPrevious)",
        "PAYHOOK_ADYEN_ACME_EU_HMAC_KEYS": adyenAcmeEU,
        "PAYHOOK_PXP_WEBHOOK_KEYS": "\(pxp),\(pxpPrevious)",
        "PAYHOOK_PXP_STALE_TS": "reject",
        "PAYHOOK_LOG_LEVEL": "error",
    ]
}

/// One webhook delivery ready to send, and what ingress must store for it.
struct SignedDelivery: Sendable {
    var provider: String
    /// `/webhooks/{provider}[/{account}]`
    var route: String
    /// Raw query string without `?`, exactly as sent ("" for none).
    var query: String
    var headers: [(String, String)]
    var body: [UInt8]
    /// The dedup key, computed here from PROVIDERS.md and the verifiers' documented format.
    var expectedDedupKey: String

    var path: String { query.isEmpty ? route : "\(route)?\(query)" }

    func with(body newBody: [UInt8]) -> SignedDelivery {
        var copy = self
        copy.body = newBody
        return copy
    }

    func with(header name: String, _ value: String?) -> SignedDelivery {
        var copy = self
        copy.headers.removeAll { $0.0.lowercased() == name.lowercased() }
        if let value { copy.headers.append((name, value)) }
        return copy
    }

    func with(route newRoute: String) -> SignedDelivery {
        var copy = self
        copy.route = newRoute
        return copy
    }
}

/// Builds and signs deliveries from the providers' published schemes, without calling any
/// payhook verifier: bodies are assembled here, by hand, and signed with `WebhookSigner`, the
/// signer `payhook send-test` uses, which `WebhookSignerTests` holds to the published vectors.
enum Sign {
    static func unique() -> String { UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") }

    static func nowSeconds() -> Int { Int(Date().timeIntervalSince1970) }

    // MARK: Mercado Pago

    /// `x-signature: ts=<ts>,v1=<hex HMAC-SHA256(secret, "id:<data.id>;request-id:<id>;ts:<ts>;")>`.
    static func mercadoPagoSignature(secret: String, dataID: String, requestID: String, ts: String) -> String {
        WebhookSigner.mercadoPagoSignature(secret: Array(secret.utf8), dataID: dataID, requestID: requestID, ts: ts)
    }

    /// A `payment.updated` notification; `data.id` travels in the query (signed) and the body.
    /// The body has non-ASCII text and odd whitespace, so byte-exact storage is observable.
    /// A custom body must carry `dataID` as its `data.id` (or none) to be accepted.
    static func mercadoPago(
        secret: String = TestSecrets.mercadoPago, account: String? = nil,
        ts: String = String(Int(Date().timeIntervalSince1970 * 1000)), dataID customDataID: String? = nil,
        body customBody: [UInt8]? = nil
    ) -> SignedDelivery {
        let dataID = customDataID ?? String(Int.random(in: 10_000_000...99_999_999_999))
        let notificationID = String(Int.random(in: 100_000_000...999_999_999_999))
        let requestID = UUID().uuidString.lowercased()
        let body = customBody ?? Array("""
            {"id":\(notificationID),"live_mode":false,"type":"payment","date_created":"2025-03-20T12:00:00.000-04:00",\
            "user_id":44444,"api_version":"v1","action":"payment.updated","data":{"id":"\(dataID)"},\
            "note":"Señor café  \\u00e9\\t"}\n
            """.utf8)
        return SignedDelivery(
            provider: "mercadopago",
            route: "/webhooks/mercadopago" + (account.map { "/\($0)" } ?? ""),
            query: "data.id=\(dataID)&type=payment&x=a%20b",
            headers: [
                ("Content-Type", "application/json"),
                ("x-request-id", requestID),
                ("x-signature", mercadoPagoSignature(secret: secret, dataID: dataID, requestID: requestID, ts: ts)),
            ],
            body: body,
            expectedDedupKey: "payment:\(dataID):payment.updated:\(notificationID)")
    }

    // MARK: Adyen

    struct AdyenItem {
        var pspReference = "PSP" + String(Int.random(in: 1_000_000_000...9_999_999_999))
        var originalReference: String? = nil
        var merchantAccountCode = "AcmeShopEU"
        var merchantReference = "order-" + Sign.unique().prefix(12)
        var value = 1130
        var currency = "EUR"
        var eventCode = "AUTHORISATION"
        var success = "true"

        /// The eight fields joined by `:`; a missing field stays as an empty string.
        var signingString: String {
            WebhookSigner.adyenSigningString(
                pspReference: pspReference, originalReference: originalReference, merchantAccountCode: merchantAccountCode,
                merchantReference: merchantReference, value: String(value), currency: currency, eventCode: eventCode, success: success)
        }

        var dedupComponent: String { [pspReference, eventCode, success, originalReference ?? ""].joined(separator: ":") }

        func json(hexKey: String) -> String {
            let key = try! Hex.decode(hexKey)
            let signature = WebhookSigner.adyenItemSignature(key: key, signingString: signingString)
            let original = originalReference.map { "\"originalReference\":\"\($0)\"," } ?? ""
            return """
                {"NotificationRequestItem":{"additionalData":{"hmacSignature":"\(signature)","authCode":"58747"},\
                "amount":{"currency":"\(currency)","value":\(value)},"eventCode":"\(eventCode)",\
                "eventDate":"2025-03-20T12:00:00+01:00","merchantAccountCode":"\(merchantAccountCode)",\
                "merchantReference":"\(merchantReference)",\(original)"operations":["CANCEL","CAPTURE","REFUND"],\
                "paymentMethod":"visa","pspReference":"\(pspReference)","reason":"58747:1111:03/2030",\
                "success":"\(success)"}}
                """
        }
    }

    /// A standard notification; each item signed with its own key (all `hexKey` unless given).
    static func adyen(
        hexKey: String = TestSecrets.adyen, account: String? = nil, items: [AdyenItem] = [AdyenItem()],
        itemKeys: [String]? = nil
    ) -> SignedDelivery {
        let keys = itemKeys ?? Array(repeating: hexKey, count: items.count)
        let itemsJSON = zip(items, keys).map { $0.json(hexKey: $1) }.joined(separator: ",")
        let body = "{\"live\":\"false\",\"notificationItems\":[\(itemsJSON)]}"
        return SignedDelivery(
            provider: "adyen",
            route: "/webhooks/adyen" + (account.map { "/\($0)" } ?? ""),
            query: "",
            headers: [("Content-Type", "application/json")],
            body: Array(body.utf8),
            expectedDedupKey: items.map(\.dedupComponent).joined(separator: "|"))
    }

    // MARK: PXP

    /// `X-Signature` = base64 HMAC-SHA256(key UTF-8, request id + timestamp + raw body).
    static func pxpSignature(key: String, requestID: String, timestamp: String, body: [UInt8]) -> String {
        WebhookSigner.pxpSignature(key: Array(key.utf8), requestID: requestID, timestamp: timestamp, body: body)
    }

    static func pxpBody(_ marker: String = Sign.unique()) -> [UInt8] {
        Array("""
            {"eventCategory":"Transaction","eventDate":"2025-03-20T11:00:00.000Z","eventData":{"state":"Authorised",\
            "systemTransactionId":"\(marker)","merchantTransactionId":"m-\(marker)","amounts":{"transaction":11.30,\
            "currencyCode":"EUR"}},"eventOwner":{"merchantGroup":"MG1","merchant":"M1","site":"S1"}}
            """.utf8)
    }

    static func pxp(
        key: String = TestSecrets.pxp, account: String? = nil, timestamp: String = String(Int(Date().timeIntervalSince1970)),
        body: [UInt8] = Sign.pxpBody()
    ) -> SignedDelivery {
        let requestID = UUID().uuidString
        return SignedDelivery(
            provider: "pxp",
            route: "/webhooks/pxp" + (account.map { "/\($0)" } ?? ""),
            query: "",
            headers: [
                ("Content-Type", "application/json"),
                ("X-Request-Id", requestID),
                ("X-Signature-Timestamp", timestamp),
                ("X-Signature", pxpSignature(key: key, requestID: requestID, timestamp: timestamp, body: body)),
            ],
            body: body,
            expectedDedupKey: "sha256:" + Hex.encode(Digest.hash(.sha256, body)).lowercased())
    }
}
