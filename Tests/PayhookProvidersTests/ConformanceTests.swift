import Foundation
import PayhookTestSupport
import Testing
@testable import PayhookProviders

/// The checks every provider's verifier must pass (STYLE.md, "Tests").
@Suite("Signature verifier conformance")
struct ConformanceTests {
    @Test("a valid signature is accepted with the current key", arguments: ProviderHarness.all)
    func validAccepted(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let result = verifier.verify(try harness.request(secret: harness.currentSecret), now: testNow)
        let delivery = try #require(result.delivery, "rejected: \(String(describing: result.rejection))")
        #expect(delivery.keyIndex == 0)
        #expect(delivery.warnings.isEmpty)
        #expect(!delivery.dedupKey.isEmpty)
        #expect(delivery.dedupKey.utf8.count <= VerifiedDelivery.maximumDedupKeyLength)
        #expect(delivery.eventType != nil)
    }

    @Test("a tampered signed input is rejected as a mismatch", arguments: ProviderHarness.all)
    func tamperedRejected(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let request = try harness.request(secret: harness.currentSecret, tampered: true)
        #expect(verifier.verify(request, now: testNow) == .rejected(.signatureMismatch))
    }

    @Test("a signature made with the wrong secret is rejected", arguments: ProviderHarness.all)
    func wrongSecretRejected(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret, harness.rotatedSecret], stalePolicy: .reject)
        let request = try harness.request(secret: harness.wrongSecret)
        #expect(verifier.verify(request, now: testNow) == .rejected(.signatureMismatch))
    }

    @Test("a delivery without its signature is rejected as missing", arguments: ProviderHarness.all)
    func missingRejected(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let request = try harness.request(secret: harness.currentSecret, signed: false)
        #expect(verifier.verify(request, now: testNow) == .rejected(.missingSignature))
    }

    @Test("a stale timestamp is rejected under the reject policy", arguments: ProviderHarness.all)
    func staleRejected(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let old = testNow.addingTimeInterval(-3600)
        let result = verifier.verify(try harness.request(secret: harness.currentSecret, at: old), now: testNow)
        if harness.hasTimestamp {
            #expect(result == .rejected(.staleTimestamp))
        } else {
            // Adyen signs no timestamp: there is nothing to be stale, so the delivery stands
            // and replays are caught by the dedup key instead.
            #expect(result.delivery?.warnings == [])
        }
    }

    @Test("a timestamp from the future is stale too", arguments: ProviderHarness.all.filter(\.hasTimestamp))
    func futureRejected(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let future = testNow.addingTimeInterval(3600)
        let result = verifier.verify(try harness.request(secret: harness.currentSecret, at: future), now: testNow)
        #expect(result == .rejected(.staleTimestamp))
    }

    @Test("a stale timestamp is accepted with a warning under the warn policy", arguments: ProviderHarness.all)
    func staleWarned(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .warn)
        let old = testNow.addingTimeInterval(-3600)
        let result = verifier.verify(try harness.request(secret: harness.currentSecret, at: old), now: testNow)
        let delivery = try #require(result.delivery)
        #expect(delivery.warnings == (harness.hasTimestamp ? ["stale_timestamp"] : []))
    }

    @Test("a timestamp inside the tolerance is fresh", arguments: ProviderHarness.all)
    func withinTolerance(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let recent = testNow.addingTimeInterval(-299)
        let result = verifier.verify(try harness.request(secret: harness.currentSecret, at: recent), now: testNow)
        #expect(result.delivery?.warnings == [])
    }

    @Test("a rotated secret (second in the ring) is accepted and reported as key 1", arguments: ProviderHarness.all)
    func rotatedAccepted(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret, harness.rotatedSecret], stalePolicy: .reject)
        let old = verifier.verify(try harness.request(secret: harness.rotatedSecret), now: testNow)
        #expect(old.delivery?.keyIndex == 1)
        let current = verifier.verify(try harness.request(secret: harness.currentSecret), now: testNow)
        #expect(current.delivery?.keyIndex == 0)
    }

    @Test("a duplicate delivery gets the same dedup key; another event does not", arguments: ProviderHarness.all)
    func duplicateIdempotent(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
        let first = try harness.request(secret: harness.currentSecret, event: 7, requestID: "req-a", at: testNow.addingTimeInterval(-120))
        let retry = try harness.request(secret: harness.currentSecret, event: 7, requestID: "req-b", at: testNow)
        let other = try harness.request(secret: harness.currentSecret, event: 8, requestID: "req-c", at: testNow)
        let firstKey = try #require(verifier.verify(first, now: testNow).delivery?.dedupKey)
        let retryKey = try #require(verifier.verify(retry, now: testNow).delivery?.dedupKey)
        let otherKey = try #require(verifier.verify(other, now: testNow).delivery?.dedupKey)
        #expect(firstKey == retryKey)
        #expect(firstKey != otherKey)
    }

    @Test("an empty key ring accepts nothing", arguments: ProviderHarness.all)
    func emptyRing(_ harness: ProviderHarness) throws {
        let verifier: any WebhookVerifier = switch harness.kind {
        case .mercadoPago: MercadoPagoSignatureVerifier(secrets: KeyRing(keys: []))
        case .adyenStandard, .adyenHeader: AdyenSignatureVerifier(hmacKeys: KeyRing(keys: []))
        case .pxp: PXPSignatureVerifier(keys: KeyRing(keys: []))
        }
        let result = verifier.verify(try harness.request(secret: harness.currentSecret), now: testNow)
        #expect(result == .rejected(.signatureMismatch))
    }

    @Test("garbage never crashes a verifier", arguments: ProviderHarness.all)
    func garbage(_ harness: ProviderHarness) throws {
        let verifier = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .warn)
        var generator = SplitMix64(seed: 0x5EED)
        let fixedBodies: [[UInt8]] = [
            [], [0xFF, 0xFE, 0x00], Array("{".utf8), Array("null".utf8), Array("[]".utf8),
            Array(repeating: UInt8(ascii: "["), count: 100_000),
            Array(String(repeating: #"{"a":"#, count: 10_000).utf8),
            Array(#"{"notificationItems":[]}"#.utf8),
            Array(#"{"notificationItems":{}}"#.utf8),
            Array(#"{"notificationItems":[1,"x",null,{"NotificationRequestItem":[]}]}"#.utf8),
            Array(#"{"notificationItems":[{"NotificationRequestItem":{"amount":"x","additionalData":{"hmacSignature":42}}}]}"#.utf8),
            Array(#"{"id":1e999999,"type":{},"action":[],"data":{"id":null}}"#.utf8),
            Array(#"{"a":"\ud800"}"#.utf8),
        ]
        let signatureValues = ["", "=", "ts=", "ts=,v1=", "v1=zz,ts=1", ",,,", "ts=1,v1=00", "====", "A", "ts=99999999999999999999999,v1=ab"]
        for body in fixedBodies {
            for value in signatureValues {
                let headers = [("x-signature", value), ("HmacSignature", value), ("x-request-id", value), ("x-signature-timestamp", value)]
                _ = verifier.verify(makeRequest(.adyen, query: "data.id=%ZZ&data.id", headers: headers, body: body), now: testNow)
            }
        }
        for _ in 0..<300 {
            let body = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let header = String(decoding: (0..<Int.random(in: 0..<60, using: &generator)).map { _ in UInt8.random(in: 32...126, using: &generator) }, as: UTF8.self)
            let headers = [("x-signature", header), ("HmacSignature", header), ("X-Request-Id", header), ("X-Signature-Timestamp", header)]
            let result = verifier.verify(makeRequest(.pxp, query: header, headers: headers, body: body), now: testNow)
            #expect(result.delivery == nil)
        }
    }
}
