import Foundation
import Testing
import PayhookCore
@testable import PayhookProviders

@Suite("Adyen signatures")
struct AdyenVerifierTests {
    /// How `success` is spelled in the generated JSON.
    enum SuccessSpelling: Sendable { case string, bool }

    /// A `NotificationRequestItem` built from vector fields, encoded with `JSONEncoder` so
    /// escaping (backslashes, slashes) is done by an independent encoder.
    struct Item: Encodable {
        struct Amount: Encodable { let currency: String; let value: Int }
        struct AdditionalData: Encodable { let hmacSignature: String }
        let pspReference: String
        let originalReference: String?
        let merchantAccountCode: String
        let merchantReference: String
        let amount: Amount
        let eventCode: String
        let success: SuccessValue
        let additionalData: AdditionalData?

        enum SuccessValue: Encodable {
            case text(String), flag(Bool)
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                switch self {
                case .text(let text): try container.encode(text)
                case .flag(let flag): try container.encode(flag)
                }
            }
        }

        init(_ fields: AdyenVectorFile.Item, signature: String?, success: SuccessSpelling = .string) {
            pspReference = fields.pspReference
            // Adyen omits an empty originalReference; the verifier must treat absent as empty.
            originalReference = fields.originalReference.isEmpty ? nil : fields.originalReference
            merchantAccountCode = fields.merchantAccountCode
            merchantReference = fields.merchantReference
            amount = Amount(currency: fields.currency, value: Int(fields.value) ?? -1)
            eventCode = fields.eventCode
            self.success = success == .string ? .text(fields.success) : .flag(fields.success == "true")
            additionalData = signature.map(AdditionalData.init(hmacSignature:))
        }
    }

    struct Notification: Encodable {
        struct Wrapper: Encodable { let NotificationRequestItem: Item }
        let live = "false"
        let notificationItems: [Wrapper]
        init(_ items: [Item]) { notificationItems = items.map(Wrapper.init) }
    }

    static func request(_ items: [Item]) throws -> WebhookRequest {
        let body = try JSONEncoder().encode(Notification(items))
        return makeRequest(.adyen, headers: [("content-type", "application/json")], body: Array(body))
    }

    static func verifier(hexKey: String) throws -> AdyenSignatureVerifier {
        AdyenSignatureVerifier(hmacKeys: try KeyRing.parse(hexKey, encoding: .hex))
    }

    @Test("every standard vector verifies as a notification item (success as a string)", arguments: try AdyenVectorFile.standard())
    func standardVector(_ vector: AdyenVectorFile.Vector) throws {
        let fields = try #require(vector.item)
        let request = try Self.request([Item(fields, signature: vector.expected)])
        // The signed string is rebuilt from the parsed JSON exactly as the vector gives it.
        let document = try #require(JSONDocument(request.body))
        let elements = try #require(document.elements(of: document.member("notificationItems", of: document.root)))
        #expect(AdyenNotificationItem(document, elements[0])?.signingString == vector.signingString)

        let delivery = try #require(try Self.verifier(hexKey: vector.hmacKey).verify(request, now: testNow).delivery)
        #expect(delivery.keyIndex == 0)
        #expect(delivery.eventType == fields.eventCode)
        #expect(delivery.dedupKey == "\(fields.pspReference):\(fields.eventCode):\(fields.success):\(fields.originalReference)")
    }

    @Test("a JSON boolean success signs as true/false", arguments: try AdyenVectorFile.standard())
    func standardVectorBoolSuccess(_ vector: AdyenVectorFile.Vector) throws {
        let fields = try #require(vector.item)
        let request = try Self.request([Item(fields, signature: vector.expected, success: .bool)])
        #expect(try Self.verifier(hexKey: vector.hmacKey).verify(request, now: testNow).delivery != nil)
    }

    @Test("amount.value is signed as the integer digits sent, never as a float")
    func amountDigits() throws {
        let vector = try #require(try AdyenVectorFile.standard().first { $0.name == "authorisation_no_original_reference" })
        let body = #"{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"\#(vector.expected)"},"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","merchantAccountCode":"TestMerchant","merchantReference":"TestPayment-1407325143704","pspReference":"7914073381342284","success":"true"}}]}"#
        let verifier = try Self.verifier(hexKey: vector.hmacKey)
        #expect(verifier.verify(makeRequest(.adyen, headers: [], body: Array(body.utf8)), now: testNow).delivery != nil)
        // The same amount written as 1130.0 is different signed text, so it must not verify.
        let float = body.replacingOccurrences(of: "\"value\":1130", with: "\"value\":1130.0")
        #expect(verifier.verify(makeRequest(.adyen, headers: [], body: Array(float.utf8)), now: testNow) == .rejected(.signatureMismatch))
        // A value sent as a JSON string is signed as that string.
        let quoted = body.replacingOccurrences(of: "\"value\":1130", with: "\"value\":\"1130\"")
        #expect(verifier.verify(makeRequest(.adyen, headers: [], body: Array(quoted.utf8)), now: testNow).delivery != nil)
    }

    @Test("every header vector verifies through HmacSignature over the raw body", arguments: try AdyenVectorFile.header())
    func headerVector(_ vector: AdyenVectorFile.Vector) throws {
        let body = try Base64Decode.bytes(try #require(vector.bodyBase64))
        let verifier = try Self.verifier(hexKey: vector.hmacKey)
        for name in ["HmacSignature", "hmacsignature", "HMACSIGNATURE"] {
            let request = makeRequest(.adyen, headers: [(name, vector.expected)], body: body)
            let delivery = try #require(verifier.verify(request, now: testNow).delivery)
            #expect(delivery.keptHeaders["hmacsignature"] == vector.expected)
        }
        var flipped = body
        flipped[flipped.count - 1] ^= 0x01
        #expect(verifier.verify(makeRequest(.adyen, headers: [("HmacSignature", vector.expected)], body: flipped), now: testNow) == .rejected(.signatureMismatch))
    }

    @Test("a management event without eventId dedups by body digest; tokenization by eventId:type")
    func headerDedup() throws {
        let vector = try #require(try AdyenVectorFile.header().first { $0.name == "header_raw_body_compact" })
        let body = try Base64Decode.bytes(try #require(vector.bodyBase64))
        let delivery = try #require(try Self.verifier(hexKey: vector.hmacKey).verify(makeRequest(.adyen, headers: [("HmacSignature", vector.expected)], body: body), now: testNow).delivery)
        #expect(delivery.dedupKey.hasPrefix("sha256:"))
        #expect(delivery.eventType == "balancePlatform.balanceAccountSweep.updated")

        let harness = ProviderHarness(kind: .adyenHeader)
        let token = try harness.verifier(ring: [harness.currentSecret], stalePolicy: .reject)
            .verify(try harness.request(secret: harness.currentSecret, event: 4), now: testNow)
        #expect(token.delivery?.dedupKey == "QBQQ9DLNRHHKGK34:recurring.token.created")
        #expect(token.delivery?.eventType == "recurring.token.created")
    }

    @Test("a batch with one bad item is rejected whole")
    func batchWithBadItem() throws {
        let vectors = try AdyenVectorFile.standard().filter { $0.hmacKey == "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00" }
        #expect(vectors.count >= 3)
        let good = try vectors.map { Item(try #require($0.item), signature: $0.expected) }
        let verifier = try Self.verifier(hexKey: vectors[0].hmacKey)

        let all = try #require(verifier.verify(try Self.request(good), now: testNow).delivery)
        #expect(all.dedupKey == vectors.map { "\($0.item!.pspReference):\($0.item!.eventCode):true:\($0.item!.originalReference)" }.joined(separator: "|"))
        #expect(all.eventType == "EVENT,REPORT_AVAILABLE,CAPTURE")

        // The second item carries the first item's signature.
        var forged = good
        forged[1] = Item(try #require(vectors[1].item), signature: vectors[0].expected)
        #expect(verifier.verify(try Self.request(forged), now: testNow) == .rejected(.signatureMismatch))

        var unsigned = good
        unsigned[2] = Item(try #require(vectors[2].item), signature: nil)
        #expect(verifier.verify(try Self.request(unsigned), now: testNow) == .rejected(.missingSignature))
    }

    @Test("items signed with different keys of the ring report the oldest key")
    func mixedKeys() throws {
        let first = try #require(try AdyenVectorFile.standard().first { $0.name == "generic" })
        let second = try #require(try AdyenVectorFile.standard().first { $0.name == "amount_zero" })
        let verifier = AdyenSignatureVerifier(hmacKeys: try KeyRing.parse("\(first.hmacKey), \(second.hmacKey)", encoding: .hex))
        let request = try Self.request([Item(first.item!, signature: first.expected), Item(second.item!, signature: second.expected)])
        #expect(verifier.verify(request, now: testNow).delivery?.keyIndex == 1)
    }

    @Test("a long batch gets a digest dedup key of bounded length")
    func longBatch() throws {
        let vector = try #require(try AdyenVectorFile.standard().first { $0.name == "capture" })
        let items = Array(repeating: Item(vector.item!, signature: vector.expected), count: 10)
        let delivery = try #require(try Self.verifier(hexKey: vector.hmacKey).verify(try Self.request(items), now: testNow).delivery)
        #expect(delivery.dedupKey.hasPrefix("sha256:"))
        #expect(delivery.dedupKey.utf8.count == 71)
        #expect(delivery.eventType == "CAPTURE")
    }

    @Test("malformed item signatures and bodies are rejected", arguments: [
        (#"{"notificationItems":[]}"#, RejectionReason.malformedBody),
        (#"{"notificationItems":"x"}"#, .malformedBody),
        (#"{"notificationItems":[{"Other":{}}]}"#, .malformedBody),
        (#"{"notificationItems":[{"NotificationRequestItem":{}}]}"#, .missingSignature),
        (#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":""}}}]}"#, .missingSignature),
        (#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"not base64!"}}}]}"#, .malformedSignature),
        (#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc"}}}]}"#, .malformedSignature),
        (#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"AAAA"}}}]}"#, .signatureMismatch),
        (#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="}}}]}"#, .signatureMismatch),
        ("TestPayload", .missingSignature),
        (#"{"type":"recurring.token.created"}"#, .missingSignature),
    ])
    func malformed(_ body: String, _ reason: RejectionReason) throws {
        let verifier = try Self.verifier(hexKey: "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00")
        #expect(verifier.verify(makeRequest(.adyen, headers: [], body: Array(body.utf8)), now: testNow) == .rejected(reason))
    }

    @Test("malformed HmacSignature headers are rejected", arguments: [
        ("", RejectionReason.missingSignature),
        ("%%%%", .malformedSignature),
        ("YA9/UDjldIO4Gq68X4ATYYoEaPYH4f4k2uzBBzEF1PA", .malformedSignature),
        ("YA9_UDjldIO4Gq68X4ATYYoEaPYH4f4k2uzBBzEF1PA=", .malformedSignature),
        ("AAAA", .signatureMismatch),
    ])
    func malformedHeader(_ header: String, _ reason: RejectionReason) throws {
        let verifier = try Self.verifier(hexKey: "9064450A8892A093D9E97EFCC9639DE31B74F3A7803135555A3C96F5A57915D6")
        let request = makeRequest(.adyen, headers: [("HmacSignature", header)], body: Array("TestPayload".utf8))
        #expect(verifier.verify(request, now: testNow) == .rejected(reason))
    }
}

/// Decodes fixture base64 with Foundation, independently of the module under test.
enum Base64Decode {
    static func bytes(_ text: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw CocoaError(.coderReadCorrupt) }
        return Array(data)
    }
}
