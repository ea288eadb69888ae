import Foundation
import Testing
import PayhookCore
import PayhookCrypto
@testable import PayhookProviders

@Suite("PXP signatures")
struct PXPVerifierTests {
    static let key = Array("pxp-webhook-key".utf8)
    static let body = #"{"eventCategory":"Token","eventDate":"2025-06-15T15:06:40Z","eventData":{},"eventOwner":{"merchantGroup":"G","merchant":"M","site":"S"}}"#

    static func request(timestamp: String, requestID: String = "5f2c", algorithm: HashAlgorithm = .sha256, key: [UInt8] = key) -> WebhookRequest {
        let message = Array(requestID.utf8) + Array(timestamp.utf8) + Array(body.utf8)
        let signature = Base64.encode(HMAC.authenticationCode(algorithm, key: key, message: message))
        return makeRequest(.pxp, headers: [("X-Request-Id", requestID), ("X-Signature-Timestamp", timestamp), ("X-Signature", signature)], body: Array(body.utf8))
    }

    /// PXP's own timestamps carry seven fractional digits (`eventDate` in
    /// https://developer.pxp.io/docs/manage-webhooks); what `X-Signature-Timestamp` holds is
    /// not documented, so every form PXP uses elsewhere must read as the same instant.
    @Test("the timestamp is accepted as Unix seconds, milliseconds or ISO 8601 (PXP's seven-digit fractions too) and signed as sent", arguments: [
        "1750000000", "1750000000000", "2025-06-15T15:06:40Z", "2025-06-15T15:06:40.123Z", "2025-06-15T17:06:40+02:00",
        "2025-06-15T15:06:40.8264455Z", "2025-06-15T15:06:40.1000000Z", "2025-06-15T17:06:40.8264455+02:00",
    ])
    func timestampFormats(_ timestamp: String) throws {
        let verifier = PXPSignatureVerifier(keys: KeyRing(keys: [Self.key]))
        let delivery = try #require(verifier.verify(Self.request(timestamp: timestamp), now: testNow).delivery)
        #expect(delivery.warnings.isEmpty)
        #expect(delivery.eventType == "Token")
        #expect(delivery.keptHeaders == ["x-request-id": "5f2c", "x-signature-timestamp": timestamp, "x-signature": Self.request(timestamp: timestamp).header("x-signature")!])
        // An hour later, each format is read as the same instant and is stale.
        #expect(verifier.verify(Self.request(timestamp: timestamp), now: testNow.addingTimeInterval(3600)) == .rejected(.staleTimestamp))
    }

    @Test("the freshness check reads a timestamp exactly as the decoders read PXP's eventDate", arguments: [
        "2025-06-15T15:06:40.8264455Z", "2025-06-15T17:06:40.8264455+02:00", "2025-06-15T17:06:40.8264455+0200",
        "2025-06-15T17:06:40+02", "2025-06-15t15:06:40z", "2025-06-15T15:06:40.Z", "2025-06-15 15:06:40Z", "2025-06-15",
    ])
    func oneTimestampParser(_ text: String) {
        #expect(TimestampFreshness.date(from: text, allowISO8601: true) == ProviderTimestamp.parse(text))
    }

    @Test("an unreadable timestamp is rejected by default and a warning under warn")
    func unreadableTimestamp() {
        let request = Self.request(timestamp: "yesterday")
        #expect(PXPSignatureVerifier(keys: KeyRing(keys: [Self.key])).verify(request, now: testNow) == .rejected(.staleTimestamp))
        let warning = PXPSignatureVerifier(keys: KeyRing(keys: [Self.key]), stalePolicy: .warn)
        #expect(warning.verify(request, now: testNow).delivery?.warnings == ["unparseable_timestamp"])
    }

    @Test("the hash is configurable", arguments: HashAlgorithm.allCases)
    func algorithms(_ algorithm: HashAlgorithm) {
        let request = Self.request(timestamp: "1750000000", algorithm: algorithm)
        let matching = PXPSignatureVerifier(keys: KeyRing(keys: [Self.key]), algorithm: algorithm)
        #expect(matching.verify(request, now: testNow).delivery != nil)
        let other: HashAlgorithm = algorithm == .sha256 ? .sha512 : .sha256
        #expect(PXPSignatureVerifier(keys: KeyRing(keys: [Self.key]), algorithm: other).verify(request, now: testNow) == .rejected(.signatureMismatch))
    }

    @Test("moving bytes between request id and timestamp breaks the signature")
    func concatenationBoundary() {
        // "5f2c" + "1750000000" == "5f2c1" + "750000000": the scheme has no separators, so this
        // is the same signed message. The freshness check is what catches the shifted time.
        let original = Self.request(timestamp: "1750000000")
        let shifted = makeRequest(.pxp, headers: [("X-Request-Id", "5f2c1"), ("X-Signature-Timestamp", "750000000"), ("X-Signature", original.header("x-signature")!)], body: original.body)
        #expect(PXPSignatureVerifier(keys: KeyRing(keys: [Self.key])).verify(shifted, now: testNow) == .rejected(.staleTimestamp))
    }

    @Test("any missing signature header is a missing signature; bad base64 is malformed", arguments: [
        ([("X-Signature-Timestamp", "1750000000"), ("X-Signature", "AAAA")], RejectionReason.missingSignature),
        ([("X-Request-Id", "r"), ("X-Signature", "AAAA")], .missingSignature),
        ([("X-Request-Id", "r"), ("X-Signature-Timestamp", "1750000000")], .missingSignature),
        ([("X-Request-Id", "r"), ("X-Signature-Timestamp", "1750000000"), ("X-Signature", " ")], .missingSignature),
        ([("X-Request-Id", "r"), ("X-Signature-Timestamp", "1750000000"), ("X-Signature", "abc")], .malformedSignature),
        ([("X-Request-Id", "r"), ("X-Signature-Timestamp", "1750000000"), ("X-Signature", "ab$=")], .malformedSignature),
        ([("X-Request-Id", "r"), ("X-Signature-Timestamp", "1750000000"), ("X-Signature", "AAAA")], .signatureMismatch),
    ])
    func headerProblems(_ headers: [(String, String)], _ reason: RejectionReason) {
        let request = makeRequest(.pxp, headers: headers, body: Array(Self.body.utf8))
        #expect(PXPSignatureVerifier(keys: KeyRing(keys: [Self.key])).verify(request, now: testNow) == .rejected(reason))
    }

    @Test("keys parsed as hex or base64 sign with their decoded bytes", arguments: [KeyEncoding.hex, .base64])
    func keyEncodings(_ encoding: KeyEncoding) throws {
        let raw: [UInt8] = [0x00, 0x9F, 0xFF, 0x10, 0x42]
        let text = encoding == .hex ? Hex.encode(raw) : Base64.encode(raw)
        let current = encoding == .hex ? "00" : "AA=="
        let verifier = PXPSignatureVerifier(keys: try KeyRing.parse("\(current),\(text)", encoding: encoding))
        #expect(verifier.verify(Self.request(timestamp: "1750000000", key: raw), now: testNow).delivery?.keyIndex == 1)
    }
}
