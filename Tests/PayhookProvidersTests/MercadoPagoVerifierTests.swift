import Foundation
import Testing
import PayhookCore
@testable import PayhookProviders

@Suite("Mercado Pago signatures")
struct MercadoPagoVerifierTests {
    /// The vectors' `ts` (1742505638683 ms), so they are fresh.
    static let vectorNow = Date(timeIntervalSince1970: 1_742_505_638.683)

    static func request(dataID: String?, requestID: String?, signature: String?, body: String = "{}") -> WebhookRequest {
        var headers: [(String, String)] = []
        if let requestID { headers.append(("x-request-id", requestID)) }
        if let signature { headers.append(("x-signature", signature)) }
        let query = dataID.map { "data.id=\($0)&type=order" } ?? "type=order"
        return makeRequest(.mercadopago, query: query, headers: headers, body: Array(body.utf8))
    }

    @Test("every fixture vector verifies and its manifest matches", arguments: try MercadoPagoVectorFile.load())
    func vector(_ vector: MercadoPagoVectorFile.Vector) throws {
        #expect(MercadoPagoSignatureVerifier.manifest(dataID: vector.dataId, requestID: vector.xRequestId, ts: vector.ts) == vector.manifest)
        let verifier = MercadoPagoSignatureVerifier(secrets: try KeyRing.parse(vector.secret, encoding: .utf8), stalePolicy: .reject)
        let request = Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: vector.xSignature)
        let delivery = try #require(verifier.verify(request, now: Self.vectorNow).delivery)
        #expect(delivery.keyIndex == 0)
        #expect(delivery.keptHeaders["x-signature"] == vector.xSignature)
        #expect(delivery.keptHeaders["x-request-id"] == vector.xRequestId)
    }

    @Test("a signature over the id as received (uppercase) is accepted; one over another id is not")
    func rawCaseAccepted() throws {
        let vectors = try MercadoPagoVectorFile.load()
        let raw = try #require(vectors.first { $0.name == "order_id_as_received" })
        let lower = try #require(vectors.first { $0.name == "order_id_lowercase" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(raw.secret.utf8)]))
        // Query carries the uppercase id; the lowercase signature is tried first, then the raw one.
        let upperQuery = try #require(raw.dataId)
        #expect(verifier.verify(Self.request(dataID: upperQuery, requestID: raw.xRequestId, signature: raw.xSignature), now: Self.vectorNow).delivery != nil)
        #expect(verifier.verify(Self.request(dataID: upperQuery, requestID: lower.xRequestId, signature: lower.xSignature), now: Self.vectorNow).delivery != nil)
        // A signature over the uppercase id does not cover a lowercase query id (no case folding upward).
        let lowerQuery = try #require(lower.dataId)
        #expect(verifier.verify(Self.request(dataID: lowerQuery, requestID: raw.xRequestId, signature: raw.xSignature), now: Self.vectorNow) == .rejected(.signatureMismatch))
    }

    @Test("a percent-encoded data.id is decoded before signing")
    func percentEncodedQuery() throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "payment_numeric_id" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        let request = Self.request(dataID: "%31%32%33456", requestID: vector.xRequestId, signature: vector.xSignature)
        #expect(verifier.verify(request, now: Self.vectorNow).delivery != nil)
    }

    @Test("a tampered ts or request id is rejected")
    func tamperedTimestamp() throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "order_id_lowercase" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        let newTS = vector.xSignature.replacingOccurrences(of: "ts=1742505638683", with: "ts=1742505638684")
        #expect(verifier.verify(Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: newTS), now: Self.vectorNow) == .rejected(.signatureMismatch))
        #expect(verifier.verify(Self.request(dataID: vector.dataId, requestID: "other", signature: vector.xSignature), now: Self.vectorNow) == .rejected(.signatureMismatch))
        // Dropping the request id changes the manifest too.
        #expect(verifier.verify(Self.request(dataID: vector.dataId, requestID: nil, signature: vector.xSignature), now: Self.vectorNow) == .rejected(.signatureMismatch))
    }

    @Test("x-signature parsing tolerates spaces, order and unknown keys", arguments: [
        " v1=633f91233312dd391ec75fa0bea539cfc2d6c4918873305b84a96cc1c58db71c , ts=1742505638683 ",
        "ts=1742505638683,v2=ffff,v1=633F91233312DD391EC75FA0BEA539CFC2D6C4918873305B84A96CC1C58DB71C",
        "foo,ts=1742505638683,,v1=633f91233312dd391ec75fa0bea539cfc2d6c4918873305b84a96cc1c58db71c,x=",
    ])
    func headerVariants(_ header: String) throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "order_id_lowercase" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        #expect(verifier.verify(Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: header), now: Self.vectorNow).delivery != nil)
    }

    @Test("malformed x-signature headers are rejected without crashing", arguments: [
        ("", RejectionReason.missingSignature),
        ("   ", .missingSignature),
        ("v1=633f91233312dd391ec75fa0bea539cfc2d6c4918873305b84a96cc1c58db71c", .malformedSignature),
        ("ts=1742505638683", .malformedSignature),
        ("ts=1742505638683,v1=", .malformedSignature),
        ("ts=1742505638683,v1=xyz", .malformedSignature),
        ("ts=1742505638683,v1=633", .malformedSignature),
        ("ts=1742505638683,v1=00,v1=633f91233312dd391ec75fa0bea539cfc2d6c4918873305b84a96cc1c58db71c", .malformedSignature),
        ("ts=1742505638683,v1=633f", .signatureMismatch),
        ("ts=1742505638683;v1=633f91233312dd391ec75fa0bea539cfc2d6c4918873305b84a96cc1c58db71c", .malformedSignature),
    ])
    func malformedHeaders(_ header: String, _ reason: RejectionReason) throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "order_id_lowercase" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        #expect(verifier.verify(Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: header), now: Self.vectorNow) == .rejected(reason))
    }

    @Test("ts in seconds is read by its length for freshness")
    func secondsTimestamp() throws {
        let secret = Array("s".utf8)
        let manifest = "id:123;request-id:r;ts:1742505638;"
        let v1 = HMACHex.sign(secret, manifest)
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [secret]), stalePolicy: .reject)
        let request = Self.request(dataID: "123", requestID: "r", signature: "ts=1742505638,v1=\(v1)")
        #expect(verifier.verify(request, now: Self.vectorNow).delivery != nil)
        #expect(verifier.verify(request, now: Self.vectorNow.addingTimeInterval(3600)) == .rejected(.staleTimestamp))
    }

    @Test("a ts that is not a number is stale under reject and a warning under warn")
    func unparseableTimestamp() throws {
        let secret = Array("s".utf8)
        let v1 = HMACHex.sign(secret, "id:123;ts:soon;")
        let request = Self.request(dataID: "123", requestID: nil, signature: "ts=soon,v1=\(v1)")
        let rejecting = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [secret]), stalePolicy: .reject)
        #expect(rejecting.verify(request, now: Self.vectorNow) == .rejected(.staleTimestamp))
        let warning = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [secret]), stalePolicy: .warn)
        #expect(warning.verify(request, now: Self.vectorNow).delivery?.warnings == ["unparseable_timestamp"])
    }

    @Test("the dedup key is type:data.id:action:id and the event type is the action")
    func dedupFromBody() throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "payment_numeric_id" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        let body = #"{"id":12345678901,"live_mode":true,"type":"payment","date_created":"2025-03-20T21:20:38Z","user_id":44444,"api_version":"v1","action":"payment.updated","data":{"id":"123456"}}"#
        let request = Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: vector.xSignature, body: body)
        let delivery = try #require(verifier.verify(request, now: Self.vectorNow).delivery)
        #expect(delivery.dedupKey == "payment:123456:payment.updated:12345678901")
        #expect(delivery.eventType == "payment.updated")
    }

    @Test("a body whose data.id is not the signed one is rejected, whatever else it says", arguments: [
        #"{"id":1,"type":"payment","action":"payment.updated","data":{"id":"654321"}}"#,
        #"{"id":1,"type":"payment","action":"payment.updated","data":{"id":123456789}}"#,
        #"{"id":1,"type":"payment","action":"payment.updated","data":{"id":" 123456"}}"#,
        #"{"id":1,"type":"payment","action":"payment.updated","data":{"id":""}}"#,
    ])
    func bodyDataIDDisagrees(_ body: String) throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "payment_numeric_id" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        let request = Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: vector.xSignature, body: body)
        #expect(verifier.verify(request, now: Self.vectorNow) == .rejected(.dataIDMismatch))
    }

    @Test("a body naming a data.id is rejected when the signature covers none")
    func bodyDataIDUnsigned() throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "no_data_id" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        let signed = Self.request(dataID: nil, requestID: vector.xRequestId, signature: vector.xSignature,
                                  body: #"{"id":1,"type":"payment","action":"payment.updated","data":{}}"#)
        #expect(verifier.verify(signed, now: Self.vectorNow).delivery != nil)
        let unsigned = Self.request(dataID: nil, requestID: vector.xRequestId, signature: vector.xSignature,
                                    body: #"{"id":1,"type":"payment","action":"payment.updated","data":{"id":"123456"}}"#)
        #expect(verifier.verify(unsigned, now: Self.vectorNow) == .rejected(.dataIDMismatch))
    }

    @Test("a body data.id that differs from the signed one only in case is accepted and the dedup key takes the signed id")
    func bodyDataIDCase() throws {
        let vectors = try MercadoPagoVectorFile.load()
        let lower = try #require(vectors.first { $0.name == "order_id_lowercase" })
        let signedID = try #require(lower.dataId)
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(lower.secret.utf8)]))
        for bodyID in [signedID, signedID.uppercased()] {
            let body = #"{"id":9,"type":"order","action":"order.processed","data":{"id":"\#(bodyID)"}}"#
            let request = Self.request(dataID: signedID, requestID: lower.xRequestId, signature: lower.xSignature, body: body)
            let delivery = try #require(verifier.verify(request, now: Self.vectorNow).delivery)
            #expect(delivery.dedupKey == "order:\(signedID):order.processed:9")
        }
    }

    @Test("a body that is not JSON still verifies (Mercado Pago signs no body) and dedups by digest")
    func nonJSONBody() throws {
        let vector = try #require(try MercadoPagoVectorFile.load().first { $0.name == "payment_numeric_id" })
        let verifier = MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [Array(vector.secret.utf8)]))
        let request = Self.request(dataID: vector.dataId, requestID: vector.xRequestId, signature: vector.xSignature, body: "not json")
        let delivery = try #require(verifier.verify(request, now: Self.vectorNow).delivery)
        // sha256("not json"), computed independently with `printf 'not json' | sha256sum`.
        #expect(delivery.dedupKey == "sha256:7ccfa1fbf3940e6f0c0375d87c0f9235a50514e14cb427bdfaf5077987b26ccf")
        #expect(delivery.eventType == nil)
    }
}
