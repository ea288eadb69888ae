import Foundation
import Testing
import PayhookCore
import PayhookCrypto
@testable import PayhookProviders

/// The signer `payhook send-test` and the test deliveries use, held to the providers' published
/// vectors (not to payhook's verifiers, which could share its mistakes).
@Suite("Webhook signer")
struct WebhookSignerTests {
    @Test("Mercado Pago: every fixture vector's x-signature is reproduced", arguments: try MercadoPagoVectorFile.load())
    func mercadoPagoVector(_ vector: MercadoPagoVectorFile.Vector) {
        let signature = WebhookSigner.mercadoPagoSignature(
            secret: Array(vector.secret.utf8), dataID: vector.dataId, requestID: vector.xRequestId, ts: vector.ts)
        #expect(signature == vector.xSignature)
    }

    @Test("Adyen: every standard vector's signing string and signature are reproduced", arguments: try AdyenVectorFile.standard())
    func adyenStandardVector(_ vector: AdyenVectorFile.Vector) throws {
        let item = try #require(vector.item)
        let signing = WebhookSigner.adyenSigningString(
            pspReference: item.pspReference, originalReference: item.originalReference.isEmpty ? nil : item.originalReference,
            merchantAccountCode: item.merchantAccountCode, merchantReference: item.merchantReference,
            value: item.value, currency: item.currency, eventCode: item.eventCode, success: item.success)
        #expect(signing == vector.signingString)
        #expect(WebhookSigner.adyenItemSignature(key: try Hex.decode(vector.hmacKey), signingString: signing) == vector.expected)
    }

    @Test("Adyen: every header vector's HmacSignature is reproduced", arguments: try AdyenVectorFile.header())
    func adyenHeaderVector(_ vector: AdyenVectorFile.Vector) throws {
        let body = try Base64.decode(try #require(vector.bodyBase64))
        #expect(WebhookSigner.adyenHeaderSignature(key: try Hex.decode(vector.hmacKey), body: body) == vector.expected)
    }

    @Test("PXP: request id, timestamp and body are signed concatenated, with the configured hash", arguments: HashAlgorithm.allCases)
    func pxp(_ algorithm: HashAlgorithm) throws {
        let key = Array("pxp-webhook-key".utf8)
        let body = Array(#"{"eventCategory":"Transaction"}"#.utf8)
        let signature = WebhookSigner.pxpSignature(key: key, algorithm: algorithm, requestID: "req-1", timestamp: "1750000000", body: body)
        // Moving one byte from the timestamp to the request id must not change what is signed:
        // PXP puts no separator between the parts.
        #expect(signature == WebhookSigner.pxpSignature(key: key, algorithm: algorithm, requestID: "req-11", timestamp: "750000000", body: body))
        #expect(try Base64.decode(signature).count == algorithm.digestLength)
        let request = makeRequest(.pxp, headers: [("X-Request-Id", "req-1"), ("X-Signature-Timestamp", "1750000000"), ("X-Signature", signature)],
                                  body: body)
        let verifier = PXPSignatureVerifier(keys: KeyRing(keys: [key]), algorithm: algorithm, stalePolicy: .warn)
        #expect(verifier.verify(request, now: testNow).delivery != nil)
    }
}
