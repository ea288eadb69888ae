import Testing
@testable import PayhookProviders

@Suite("Key rings from configuration")
struct KeyRingTests {
    @Test("entries are trimmed and kept in order, current first")
    func parsesInOrder() throws {
        let ring = try KeyRing.parse(" current , previous\n", encoding: .utf8)
        #expect(ring.keys == [Array("current".utf8), Array("previous".utf8)])
        let hex = try KeyRing.parse("DFB1eb54,00ff", encoding: .hex)
        #expect(hex.keys == [[0xDF, 0xB1, 0xEB, 0x54], [0x00, 0xFF]])
        let base64 = try KeyRing.parse("AAEC", encoding: .base64)
        #expect(base64.keys == [[0, 1, 2]])
    }

    @Test("bad configuration names the entry's position, never its content", arguments: [
        ("", KeyEncoding.utf8, KeyRingError.Code.empty, nil as Int?),
        ("  \n", .utf8, .empty, nil),
        ("s3cr3t,", .utf8, .emptyEntry, 2),
        (",s3cr3t", .utf8, .emptyEntry, 1),
        ("s3cr3t, ,other", .utf8, .emptyEntry, 2),
        ("00ff,s3cr3t", .hex, .invalidEncoding, 2),
        ("0f0", .hex, .invalidEncoding, 1),
        ("AAEC,s3cr3t!!", .base64, .invalidEncoding, 2),
    ])
    func rejects(_ text: String, _ encoding: KeyEncoding, _ code: KeyRingError.Code, _ position: Int?) {
        do {
            let ring = try KeyRing.parse(text, encoding: encoding)
            Issue.record("parsed \(ring.keys.count) keys")
        } catch {
            #expect(error.code == code)
            #expect(error.position == position)
            #expect(!error.description.contains("s3cr3t"))
            #expect(!String(reflecting: error).contains("s3cr3t"))
        }
    }

    @Test("a ring never shows its keys when printed or dumped")
    func redacted() throws {
        let ring = try KeyRing.parse("s3cr3t-one,s3cr3t-two", encoding: .utf8)
        #expect("\(ring)" == "KeyRing(2 keys)")
        #expect(!String(reflecting: ring).contains("s3cr3t"))
        var dumped = ""
        dump(ring, to: &dumped)
        #expect(!dumped.contains("115"))   // "s" as a byte value
        #expect(!dumped.contains("s3cr3t"))
    }
}
