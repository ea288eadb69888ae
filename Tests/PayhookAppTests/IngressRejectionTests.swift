import Foundation
import PayhookCrypto
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// A delivery that does not verify is never acknowledged (401) and never stored in
/// `inbound_events`; it is recorded, bounded, in `rejected_deliveries` (DESIGN.md invariant 2).
@Suite("Ingress refuses deliveries that do not verify", .timeLimit(.minutes(5)))
struct IngressRejectionTests {
    enum Forgery: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case mercadoPagoWrongSecret, mercadoPagoTamperedDataID, mercadoPagoMissingSignature, mercadoPagoStaleTimestamp
        case mercadoPagoBodyDataIDDiffers, mercadoPagoBodyDataIDUnsigned
        case adyenTamperedAmount, adyenWrongKey, adyenMissingItemSignature, adyenBadSecondItemOfTwo
        case pxpTamperedBody, pxpWrongKey, pxpMissingSignature, pxpStaleTimestamp

        var testDescription: String { rawValue }

        /// The forged delivery and the reason `rejected_deliveries` must record.
        func make() -> (SignedDelivery, reason: String) {
            let staleSeconds = Int(Date().timeIntervalSince1970) - 3600
            switch self {
            case .mercadoPagoWrongSecret:
                return (Sign.mercadoPago(secret: "not-the-secret"), "signature_mismatch")
            case .mercadoPagoTamperedDataID:
                // data.id is the signed part of a Mercado Pago delivery (the body is not signed).
                var delivery = Sign.mercadoPago()
                delivery.query = delivery.query.replacingOccurrences(of: "data.id=", with: "data.id=9")
                return (delivery, "signature_mismatch")
            case .mercadoPagoBodyDataIDDiffers:
                // Correctly signed for the query's data.id; the unsigned body names another resource.
                let delivery = Sign.mercadoPago()
                let body = String(decoding: delivery.body, as: UTF8.self)
                    .replacingOccurrences(of: #""data":{"id":""#, with: #""data":{"id":"9"#)
                return (delivery.with(body: Array(body.utf8)), "data_id_mismatch")
            case .mercadoPagoBodyDataIDUnsigned:
                // A signature without an id (the manifest drops the pair) cannot vouch for the body's data.id.
                var delivery = Sign.mercadoPago()
                let requestID = UUID().uuidString.lowercased()
                let ts = String(Int(Date().timeIntervalSince1970 * 1000))
                let manifest = "request-id:\(requestID);ts:\(ts);"
                let mac = HMAC.authenticationCode(.sha256, key: Array(TestSecrets.mercadoPago.utf8), message: Array(manifest.utf8))
                delivery.query = "type=payment"
                delivery = delivery.with(header: "x-request-id", requestID)
                    .with(header: "x-signature", "ts=\(ts),v1=\(Hex.encode(mac).lowercased())")
                return (delivery, "data_id_mismatch")
            case .mercadoPagoMissingSignature:
                return (Sign.mercadoPago().with(header: "x-signature", nil), "missing_signature")
            case .mercadoPagoStaleTimestamp:
                // PAYHOOK_MERCADOPAGO_STALE_TS=reject in TestSecrets.environment; ts in ms, an hour old.
                return (Sign.mercadoPago(ts: String(staleSeconds * 1000)), "stale_timestamp")
            case .adyenTamperedAmount:
                let delivery = Sign.adyen()
                let tampered = String(decoding: delivery.body, as: UTF8.self).replacingOccurrences(of: "\"value\":1130", with: "\"value\":1")
                return (delivery.with(body: Array(tampered.utf8)), "signature_mismatch")
            case .adyenWrongKey:
                return (Sign.adyen(hexKey: TestSecrets.adyenAcmeEU), "signature_mismatch")
            case .adyenMissingItemSignature:
                let delivery = Sign.adyen()
                let body = String(decoding: delivery.body, as: UTF8.self)
                let stripped = body.replacingOccurrences(of: #""hmacSignature":"[^"]*","#, with: "", options: .regularExpression)
                return (delivery.with(body: Array(stripped.utf8)), "missing_signature")
            case .adyenBadSecondItemOfTwo:
                var second = Sign.AdyenItem()
                second.eventCode = "CAPTURE"
                return (Sign.adyen(items: [Sign.AdyenItem(), second], itemKeys: [TestSecrets.adyen, TestSecrets.adyenAcmeEU]),
                        "signature_mismatch")
            case .pxpTamperedBody:
                let delivery = Sign.pxp()
                var body = delivery.body
                body[body.count / 2] ^= 0x01
                return (delivery.with(body: body), "signature_mismatch")
            case .pxpWrongKey:
                return (Sign.pxp(key: "not-the-key"), "signature_mismatch")
            case .pxpMissingSignature:
                return (Sign.pxp().with(header: "X-Signature", nil), "missing_signature")
            case .pxpStaleTimestamp:
                // The test environment sets PAYHOOK_PXP_STALE_TS=reject (the default is warn).
                return (Sign.pxp(timestamp: String(staleSeconds)), "stale_timestamp")
            }
        }
    }

    @Test("a forged, tampered, unsigned or stale delivery is answered 401, not stored, and recorded with its reason",
          arguments: Forgery.allCases)
    func forgeryRefused(forgery: Forgery) async throws {
        try await IngressHarness.with("reject") { (ingress) async throws in
            let (delivery, reason) = forgery.make()
            let response = try await ingress.post(delivery)
            #expect(response.status == 401, "\(response)")

            let rejected = try await ingress.awaitRejected(delivery.body)
            #expect(rejected.map(\.reason) == [reason])
            #expect(rejected.first?.provider == delivery.provider)
            #expect(rejected.first?.bodySize == delivery.body.count)
            #expect(rejected.first?.body == delivery.body)
            // Checked after the rejection row exists, so a late write would have had its chance.
            #expect(try await ingress.database.inboundCount(body: delivery.body) == 0)
            let inbound = try await ingress.database.query("SELECT count(*) AS n FROM inbound_events").rows[0].decode("n", as: Int.self)
            #expect(inbound == 0)
        }
    }

    @Test("a rejected body is stored truncated to 4096 bytes while body_size keeps the real size")
    func rejectedBodyTruncated() async throws {
        try await IngressHarness.with("reject_big") { (ingress) async throws in
            let padding = String(repeating: "x", count: 20_000)
            let body = Array("{\"eventCategory\":\"Transaction\",\"pad\":\"\(padding)\"}".utf8)
            let delivery = Sign.pxp(key: "forger", body: body)
            #expect(try await ingress.post(delivery).status == 401)
            let rows = try await ingress.awaitRejected(body)
            try #require(rows.count == 1)
            #expect(rows[0].body == Array(body.prefix(4096)))
            #expect(rows[0].bodySize == body.count)
            #expect(rows[0].reason == "signature_mismatch")
        }
    }

    @Test("an account with no key ring is answered 404 and nothing is stored")
    func unknownAccount() async throws {
        try await IngressHarness.with("reject_account") { (ingress) async throws in
            let delivery = Sign.adyen(account: "nobody")
            let response = try await ingress.post(delivery)
            #expect(response.status == 404, "\(response)")
            #expect(try await ingress.database.inboundCount(body: delivery.body) == 0)
            let rejected = try await ingress.awaitRejected(delivery.body)
            #expect(rejected.map(\.reason) == ["unknown_account"])
            #expect(rejected.map(\.account) == ["nobody"])
        }
    }

    @Test("a provider with no secret configured is refused 503, never 2xx, even with a plausible signature")
    func providerWithoutSecret() async throws {
        try await IngressHarness.with("reject_unconfigured", overrides: ["PAYHOOK_PXP_WEBHOOK_KEYS": nil]) { (ingress) async throws in
            let delivery = Sign.pxp()
            let response = try await ingress.post(delivery)
            #expect(response.status == 503, "\(response)")
            #expect(try await ingress.database.inboundCount(body: delivery.body) == 0)
            // The other providers keep working.
            #expect(try await ingress.post(Sign.adyen()).status == 200)
        }
    }
}
