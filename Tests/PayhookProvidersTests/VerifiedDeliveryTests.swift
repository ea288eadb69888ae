import Testing
@testable import PayhookProviders

@Suite("Verified deliveries")
struct VerifiedDeliveryTests {
    @Test("dedup keys up to 200 bytes are kept; longer ones become a sha256 digest")
    func boundedKeys() {
        let short = String(repeating: "k", count: 200)
        #expect(VerifiedDelivery(dedupKey: short, eventType: nil, keptHeaders: [:], warnings: [], keyIndex: 0).dedupKey == short)
        let long = String(repeating: "k", count: 201)
        let bounded = VerifiedDelivery(dedupKey: long, eventType: nil, keptHeaders: [:], warnings: [], keyIndex: 0).dedupKey
        // SHA-256 of 201 "k" bytes, computed outside this code base (Python hashlib).
        #expect(bounded == "sha256:ebf0ead0a3b837bc388d6a36c93833fff64a0a8bc8198fc0f1b7b5031dddd254")
        #expect(bounded.utf8.count == 71)
        // Multi-byte characters count by bytes, so a column sized in characters also fits.
        let wide = String(repeating: "é", count: 101)
        #expect(VerifiedDelivery(dedupKey: wide, eventType: nil, keptHeaders: [:], warnings: [], keyIndex: 0).dedupKey.hasPrefix("sha256:"))
    }

    @Test("rejection reasons keep their stored spellings")
    func reasonSpellings() {
        #expect(RejectionReason.allCases.map(\.rawValue) == [
            "missing_signature", "malformed_signature", "signature_mismatch", "stale_timestamp", "malformed_body", "data_id_mismatch",
        ])
    }

    @Test("unsigned body text with control characters never reaches the stored key or event type")
    func controlCharactersAreMadeStorable() {
        let delivery = VerifiedDelivery(
            dedupKey: "payment\u{0}:123:payment.updated:9", eventType: "payment.\u{0}updated",
            keptHeaders: [:], warnings: [], keyIndex: 0)
        #expect(delivery.dedupKey.hasPrefix("sha256:"))
        #expect(!delivery.dedupKey.utf8.contains(0))
        #expect(delivery.eventType == nil)
        let again = VerifiedDelivery(
            dedupKey: "payment\u{0}:123:payment.updated:9", eventType: nil, keptHeaders: [:], warnings: [], keyIndex: 0)
        #expect(again.dedupKey == delivery.dedupKey, "a duplicate must still map to the same key")
    }

    @Test("ordinary keys and event types are kept as they are")
    func ordinaryValuesKept() {
        let delivery = VerifiedDelivery(
            dedupKey: "payment:123:payment.updated:9", eventType: "payment.updated", keptHeaders: [:], warnings: [], keyIndex: 0)
        #expect(delivery.dedupKey == "payment:123:payment.updated:9")
        #expect(delivery.eventType == "payment.updated")
        let long = VerifiedDelivery(
            dedupKey: "k", eventType: String(repeating: "x", count: 101), keptHeaders: [:], warnings: [], keyIndex: 0)
        #expect(long.eventType == nil)
    }
}

@Suite("Kept signature headers")
struct KeptHeadersTests {
    @Test("lookup by name; kept from request headers by name, first value wins; equality ignores order and holds both ways")
    func lookupAndEquality() {
        let kept: KeptHeaders = ["x-signature": "ts=1,v1=ab", "x-request-id": "r-1"]
        #expect(kept["x-request-id"] == "r-1")
        #expect(kept["x-missing"] == nil)
        #expect(kept == ["x-request-id": "r-1", "x-signature": "ts=1,v1=ab"])
        #expect(kept != ["x-request-id": "r-1"])
        #expect(kept != ["x-request-id": "r-1", "x-signature": "other"])
        let duplicated = KeptHeaders([.init(name: "a", value: "1"), .init(name: "a", value: "1")])
        let two: KeptHeaders = ["a": "1", "b": "2"]
        #expect(duplicated != two)
        #expect(two != duplicated)
        let fromRequest = KeptHeaders(
            [(name: "x-signature", value: "first"), (name: "host", value: "h"), (name: "x-signature", value: "second")],
            keeping: ["x-request-id", "x-signature"])
        #expect(fromRequest.headers == [.init(name: "x-signature", value: "first")])
        let repeatedLiteral: KeptHeaders = ["a": "first", "a": "second"]
        #expect(repeatedLiteral["a"] == "first")
        #expect(repeatedLiteral.headers.count == 1)
    }
}
