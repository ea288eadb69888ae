import PayhookTestSupport
import Testing
@testable import PayhookCore

@Suite("The JSON tree built from the span reader agrees with the spans")
struct JSONDocumentTests {
    /// `JSONValue.parse` accepts exactly when `JSONDocument` does, and every value in the tree
    /// reads the same as through the document's span accessors; an independently written reader
    /// (``ReferenceJSON``) accepts the same documents and reads the same tree.
    static func expectAgreement(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let value = JSONValue.parse(bytes)
        let document = JSONDocument(bytes)
        #expect(ReferenceJSON.parse(bytes) == value, "\(String(decoding: bytes, as: UTF8.self))",
                sourceLocation: sourceLocation)
        #expect((value == nil) == (document == nil), "\(String(decoding: bytes, as: UTF8.self))",
                sourceLocation: sourceLocation)
        if let value, let document {
            #expect(agrees(value, document, document.root), "\(String(decoding: bytes, as: UTF8.self))",
                    sourceLocation: sourceLocation)
        }
    }

    static func agrees(_ value: JSONValue, _ document: JSONDocument, _ node: JSONDocument.Node?) -> Bool {
        guard let node else { return false }
        guard value.scalarText == document.scalarText(node) else { return false }
        switch value {
        case .object(let object):
            guard document.isObject(node), document.elements(of: node) == nil else { return false }
            return object.members.allSatisfy { agrees($0.value, document, document.member($0.key, of: node)) }
                && document.member("\u{0}absent", of: node) == nil
        case .array(let elements):
            guard !document.isObject(node), let nodes = document.elements(of: node), nodes.count == elements.count
            else { return false }
            return zip(elements, nodes).allSatisfy { agrees($0, document, $1) }
        case .string, .number, .bool, .null:
            return !document.isObject(node) && document.elements(of: node) == nil && document.member("a", of: node) == nil
        }
    }

    static let corpus: [String] = [
        "", " ", "{", "}", "{\"a\":1,}", "[1,]", "01", "1.", "-", ".5", "+1", "1e", "tru", "nul", "\"abc",
        "{\"a\":1}{", "{\"a\":1} x", "{\"a\":1,\"a\":2}", "\"\\ud800\"", "\"\\udc00\"", "\"\\x\"", "\"a\u{01}\"",
        "{a:1}", "'a'", "[1 2]", "0", "-0", "-0.5e+7", "1E-2", "true", "false", "null", " [ ] ", "{ }",
        #"{"s":"a\\b\/c\"d\n\u00e9\ud83d\ude00"}"#, #"{"a":{"b":[1,{"c":null}]},"d":"é"}"#,
        #"{"\u0061":1,"a":2}"#, #"{"é":1,"e\u0301":2}"#, #"{"K":1,"\u212a":2}"#, #"{"K":1,"K":2}"#,
        #"{"type":"x","\u0074ype":"y"}"#, #"{"\u0074ype":"payment","action":"a\tb"}"#,
        #"{"a":"\ud83d"}"#, #"{"a":"\ud83dx"}"#, #"{"a":"\ud83d\u0041"}"#, #"{"a":"\u00"}"#, #"{"a":"\uZZZZ"}"#,
        #"[true,false,null,"",0,-1.25,{},[]]"#, "[\"\u{7F}\"]", "{\"a\"  :  1 , \"b\" :[ ] }",
    ]

    @Test("the fixed corpus reads the same as with JSONValue")
    func corpusAgrees() {
        for text in Self.corpus { Self.expectAgreement(Array(text.utf8)) }
        Self.expectAgreement([0x22, 0xC3, 0x28, 0x22])
        Self.expectAgreement([0x22, 0xC3, 0xA9, 0x22])
        Self.expectAgreement([0x22, 0xED, 0xA0, 0x80, 0x22])  // encoded surrogate
        Self.expectAgreement([0x22, 0xC0, 0xAF, 0x22])  // overlong
        Self.expectAgreement([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22])  // above U+10FFFF
        Self.expectAgreement([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22])
    }

    @Test("nesting is bounded at the same depth")
    func depth() {
        for depth in [63, 64, 65, 66] {
            Self.expectAgreement(Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8))
            Self.expectAgreement(Array((String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)).utf8))
        }
        #expect(JSONDocument(Array(repeating: UInt8(ascii: "["), count: 1_000_000)) == nil)
    }

    @Test("duplicate keys are refused in very large objects too")
    func manyKeys() {
        let many = (0..<20_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let document = JSONDocument(Array("{\(many)}".utf8))
        #expect(document.flatMap { $0.scalarText($0.member("k19999", of: $0.root)) } == "19999")
        #expect(JSONDocument(Array("{\(many),\"k7\":1}".utf8)) == nil)
        #expect(JSONDocument(Array("{\(many),\"k\\u0037\":1}".utf8)) == nil)
        for count in [15, 16, 17, 18] {
            let keys = (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
            Self.expectAgreement(Array("{\(keys)}".utf8))
            Self.expectAgreement(Array("{\(keys),\"k0\":0}".utf8))
            Self.expectAgreement(Array("{\(keys),\"k\(count - 1)\":0}".utf8))
        }
    }

    @Test("the UTF-8 rule is the one String(validating:) applies")
    func utf8Rule() {
        var random = SplitMix64(seed: 0x5554_4638)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                    0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        for _ in 0..<50_000 {
            let length = Int.random(in: 1...5, using: &random)
            let bytes = (0..<length).map { _ in interesting.randomElement(using: &random)! }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            let actual = bytes.withUnsafeBufferPointer { JSONDocument.isValidUTF8($0) }
            #expect(actual == expected, "\(bytes)")
            if actual != expected { return }
        }
    }

    @Test("a quote, backslash, control or non-ASCII byte is seen at every offset of a long string")
    func specialBytesAtEveryOffset() {
        // Strings are scanned eight bytes at a time; each special byte at each offset (and so
        // at each position within a word) must be read exactly as JSONValue reads it.
        let plain = Array(#"{"k":"abcdefghijklmnopqrstuvwx","n":1}"#.utf8)
        let specials: [UInt8] = [0x22, 0x5C, 0x00, 0x01, 0x1F, 0x7F, 0x80, 0xC3, 0xFF]
        for offset in 6..<30 {
            for special in specials {
                var replaced = plain
                replaced[offset] = special
                Self.expectAgreement(replaced)
                var inserted = plain
                inserted.insert(special, at: offset)
                Self.expectAgreement(inserted)
            }
        }
    }

    @Test("randomly mutated webhook bodies read the same as with JSONValue")
    func mutations() {
        var random = SplitMix64(seed: 0x4A53_4F4E)
        let seeds = Self.corpus.filter { JSONValue.parse(Array($0.utf8)) != nil } + [
            #"{"id":12345,"type":"payment","action":"payment.updated","data":{"id":"wp27800n0"},"live_mode":false}"#,
            #"{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"If="},"amount":{"currency":"EUR","value":1999},"eventCode":"AUTHORISATION","success":"true"}}]}"#,
            #"{"eventCategory":"Transaction","eventData":{"amounts":{"transaction":19.99}},"x":["\u00e9",true]}"#,
        ]
        let alphabet: [UInt8] = Array(#"{}[]":,\ubfnrt0123456789-+.eE"aKé"#.utf8) + [0x20, 0x0A, 0x01, 0x80, 0xC3, 0xE2, 0xF0, 0xFF]
        for _ in 0..<40_000 {
            var bytes = Array(seeds.randomElement(using: &random)!.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0...bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes.insert(alphabet.randomElement(using: &random)!, at: position)
                case 1: if position < bytes.count { bytes.remove(at: position) }
                default: if position < bytes.count { bytes[position] = alphabet.randomElement(using: &random)! }
                }
            }
            Self.expectAgreement(bytes)
        }
    }
}
