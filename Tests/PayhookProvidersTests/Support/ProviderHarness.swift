import Foundation
import PayhookCore
import PayhookCrypto
import Testing
@testable import PayhookProviders

/// The fixed clock every test reads instead of `Date()`.
let testNow = Date(timeIntervalSince1970: 1_750_000_000)

/// Builds a `WebhookRequest` the way the HTTP layer would.
func makeRequest(
    _ provider: ProviderID, query: String = "", headers: [(String, String)], body: [UInt8]
) -> WebhookRequest {
    WebhookRequest(
        provider: provider, account: nil, rawQuery: query,
        headers: headers.map { (name: $0.0, value: $0.1) }, body: body,
        remoteAddress: "203.0.113.7", receivedAt: testNow)
}

/// Knows how one provider signs a delivery, so one conformance suite can drive them all.
///
/// Adyen appears twice because it has two independent schemes (item signatures in standard
/// webhooks, a header over the body for tokenization/management).
struct ProviderHarness: Sendable, CustomTestStringConvertible {
    enum Kind: String, Sendable { case mercadoPago, adyenStandard, adyenHeader, pxp }
    let kind: Kind

    static let all: [ProviderHarness] = [.init(kind: .mercadoPago), .init(kind: .adyenStandard), .init(kind: .adyenHeader), .init(kind: .pxp)]

    var testDescription: String { kind.rawValue }

    var isAdyen: Bool { kind == .adyenStandard || kind == .adyenHeader }
    var encoding: KeyEncoding { isAdyen ? .hex : .utf8 }
    /// Adyen signs no timestamp; its stale checks assert acceptance instead.
    var hasTimestamp: Bool { !isAdyen }

    var currentSecret: String {
        isAdyen ? "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056" : "current-secret"
    }
    var rotatedSecret: String {
        isAdyen ? "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00" : "previous-secret"
    }
    var wrongSecret: String {
        isAdyen ? "9064450A8892A093D9E97EFCC9639DE31B74F3A7803135555A3C96F5A57915D6" : "attacker-guess"
    }

    func verifier(ring: [String], stalePolicy: StaleTimestampPolicy) throws -> any WebhookVerifier {
        let keys = try KeyRing.parse(ring.joined(separator: ","), encoding: encoding)
        switch kind {
        case .mercadoPago: return MercadoPagoSignatureVerifier(secrets: keys, stalePolicy: stalePolicy)
        case .adyenStandard, .adyenHeader: return AdyenSignatureVerifier(hmacKeys: keys)
        case .pxp: return PXPSignatureVerifier(keys: keys, stalePolicy: stalePolicy)
        }
    }

    private func keyBytes(_ secret: String) throws -> [UInt8] {
        isAdyen ? try Hex.decode(secret) : Array(secret.utf8)
    }

    /// A delivery of event number `event`, signed with `secret` at time `at`.
    /// - Parameters:
    ///   - tampered: change a signed input after signing (the body, or for Mercado Pago, whose
    ///     body is unsigned, the query's `data.id`).
    ///   - signed: `false` leaves the signature out entirely.
    func request(
        secret: String, event: Int = 1, requestID: String = "req-1", at: Date = testNow,
        tampered: Bool = false, signed: Bool = true
    ) throws -> WebhookRequest {
        let key = try keyBytes(secret)
        switch kind {
        case .mercadoPago:
            let dataID = "ORD01JQ4S4KY8HWQ6NA5PXB65B3D\(event)"
            let ts = String(Int64(at.timeIntervalSince1970 * 1000))
            let manifest = "id:\(dataID.lowercased());request-id:\(requestID);ts:\(ts);"
            let v1 = Hex.encode(HMAC.authenticationCode(key: key, message: Array(manifest.utf8)))
            let body = #"{"action":"order.processed","api_version":"v1","data":{"id":"\#(dataID)"},"date_created":"2025-06-15T15:06:40Z","id":\#(5_000 + event),"live_mode":false,"type":"order","user_id":"123"}"#
            let queryID = tampered ? "ORD01JQ4S4KY8HWQ6NA5PXB65B3D\(event + 1)" : dataID
            var headers = [("X-Request-Id", requestID)]
            if signed { headers.append(("X-Signature", "ts=\(ts),v1=\(v1)")) }
            return makeRequest(.mercadopago, query: "data.id=\(queryID)&type=order", headers: headers, body: Array(body.utf8))

        case .adyenStandard:
            let fields = ["79140733813422\(event)", "", "TestMerchant", "order-\(event)", "1130", "EUR", "AUTHORISATION", "true"]
            let signature = Base64.encode(HMAC.authenticationCode(key: key, message: Array(fields.joined(separator: ":").utf8)))
            let value = tampered ? "1131" : "1130"
            let additional = signed ? #","additionalData":{"hmacSignature":"\#(signature)"}"# : ""
            let body = #"{"live":"false","notificationItems":[{"NotificationRequestItem":{"amount":{"currency":"EUR","value":\#(value)},"eventCode":"AUTHORISATION","eventDate":"2025-06-15T15:06:40+02:00","merchantAccountCode":"TestMerchant","merchantReference":"order-\#(event)","pspReference":"79140733813422\#(event)","success":"true"\#(additional)}}]}"#
            return makeRequest(.adyen, headers: [("Content-Type", "application/json")], body: Array(body.utf8))

        case .adyenHeader:
            let body = #"{"createdAt":"2025-06-15T15:06:40+02:00","data":{"merchantAccount":"TestMerchant","operation":"created","shopperReference":"shopper-1","storedPaymentMethodId":"M5N7TQ4TG5PFWR50","type":"visastandarddebit"},"environment":"test","eventId":"QBQQ9DLNRHHKGK3\#(event)","type":"recurring.token.created"}"#
            let signature = Base64.encode(HMAC.authenticationCode(key: key, message: Array(body.utf8)))
            let sent = tampered ? body.replacingOccurrences(of: "shopper-1", with: "shopper-2") : body
            var headers = [("Content-Type", "application/json")]
            if signed { headers.append(("HmacSignature", signature)) }
            return makeRequest(.adyen, headers: headers, body: Array(sent.utf8))

        case .pxp:
            let timestamp = String(Int64(at.timeIntervalSince1970))
            let body = #"{"eventCategory":"Transaction","eventData":{"merchantTransactionId":"m-\#(event)","state":"Authorised","systemTransactionId":"sys-\#(event)"},"eventDate":"2025-06-15T13:06:40Z","eventOwner":{"merchant":"M1","merchantGroup":"G1","site":"S1"}}"#
            let message = Array(requestID.utf8) + Array(timestamp.utf8) + Array(body.utf8)
            let signature = Base64.encode(HMAC.authenticationCode(key: key, message: message))
            let sent = tampered ? body.replacingOccurrences(of: "Authorised", with: "Captured") : body
            var headers = [("X-Request-Id", requestID), ("X-Signature-Timestamp", timestamp)]
            if signed { headers.append(("X-Signature", signature)) }
            return makeRequest(.pxp, headers: headers, body: Array(sent.utf8))
        }
    }
}

extension VerificationResult {
    /// The accepted delivery, or `nil` when rejected.
    var delivery: VerifiedDelivery? {
        if case .verified(let delivery) = self { return delivery }
        return nil
    }

    /// The rejection reason, or `nil` when accepted.
    var rejection: RejectionReason? {
        if case .rejected(let reason) = self { return reason }
        return nil
    }
}
