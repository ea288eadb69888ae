import Testing
@testable import PayhookCrypto

@Suite("Hex and base64")
struct EncodingTests {
    static let samples: [[UInt8]] = [[], [0], [0xFF], [0, 1], [1, 2, 3], [0xDE, 0xAD, 0xBE, 0xEF], Array(0...255)]

    @Test("hex round-trips any bytes", arguments: samples)
    func hexRoundTrip(_ bytes: [UInt8]) throws {
        #expect(try Hex.decode(Hex.encode(bytes)) == bytes)
    }

    @Test("hex encodes lowercase and decodes either case")
    func hexCase() throws {
        #expect(Hex.encode([0xAB, 0xCD, 0x0F]) == "abcd0f")
        #expect(try Hex.decode("ABCD0f") == [0xAB, 0xCD, 0x0F])
    }

    @Test("malformed hex is rejected", arguments: [
        ("abc", EncodingError.Code.oddLength),
        ("zz", .invalidCharacter),
        ("0g", .invalidCharacter),
        (" 00", .oddLength),
        ("00 ", .oddLength),
        ("0x00", .invalidCharacter),
        ("é", .invalidCharacter),   // two UTF-8 bytes, neither a hex digit
    ])
    func hexMalformed(_ text: String, _ code: EncodingError.Code) {
        #expect(throws: EncodingError.self) { try Hex.decode(text) }
        do {
            _ = try Hex.decode(text)
        } catch {
            #expect(error.code == code)
            #expect(error.encoding == "hex")
        }
    }

    @Test("base64 round-trips any bytes", arguments: samples)
    func base64RoundTrip(_ bytes: [UInt8]) throws {
        #expect(try Base64.decode(Base64.encode(bytes)) == bytes)
    }

    @Test("base64 matches RFC 4648 test vectors", arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func base64Vectors(_ plain: String, _ encoded: String) throws {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(try Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test("malformed base64 is rejected", arguments: [
        ("Zg", EncodingError.Code.invalidLength),
        ("Zg=", .invalidLength),
        ("Zm9v\n", .invalidLength),
        ("Zm9v YmFy", .invalidLength),
        ("Zm9-", .invalidCharacter),
        ("Zm9_", .invalidCharacter),
        ("Zm 9", .invalidCharacter),
        ("=Zm9", .invalidPadding),
        ("Z=9v", .invalidPadding),
        ("Zg=a", .invalidPadding),
        ("Zm9v====", .invalidPadding),
        ("Zh==", .nonCanonical),
        ("Zm9=", .nonCanonical),
        ("ÿÿÿÿ", .invalidCharacter),
    ])
    func base64Malformed(_ text: String, _ code: EncodingError.Code) {
        #expect(throws: EncodingError.self) { try Base64.decode(text) }
        do {
            _ = try Base64.decode(text)
        } catch {
            #expect(error.code == code)
        }
    }

    @Test("decoding errors never echo the input")
    func errorsRedact() {
        let secret = "s3cr3t-k3y-material!"
        do {
            _ = try Hex.decode(secret)
            Issue.record("expected a failure")
        } catch {
            #expect(!error.description.contains("s3cr3t"))
            #expect(error.description.contains("hex"))
        }
        do {
            _ = try Base64.decode(secret)
            Issue.record("expected a failure")
        } catch {
            #expect(!error.description.contains("s3cr3t"))
            #expect(error.description.contains("base64"))
        }
    }
}
