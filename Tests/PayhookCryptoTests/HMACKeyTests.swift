import Testing
@testable import PayhookCrypto

@Suite("Prepared HMAC keys")
struct HMACKeyTests {
    @Test("a prepared key matches RFC 4231 for SHA-256 and SHA-512, on first and later uses",
          arguments: try RFCVectors.load().hmac)
    func rfc4231(_ vector: RFCVectors.HMACCase) throws {
        let key = try Hex.decode(vector.keyHex), message = try Hex.decode(vector.messageHex)
        let sha256 = HMACKey(.sha256, key: key), sha512 = HMACKey(.sha512, key: key)
        for _ in 0..<3 {
            #expect(Hex.encode(sha256.authenticationCode(message)) == vector.sha256)
            #expect(Hex.encode(sha512.authenticationCode(message)) == vector.sha512)
        }
    }

    @Test("a prepared key matches RFC 2202 for SHA-1", arguments: try RFCVectors.load().hmacSHA1)
    func rfc2202(_ vector: RFCVectors.SHA1Case) throws {
        let key = HMACKey(.sha1, key: try Hex.decode(vector.keyHex))
        let message = try Hex.decode(vector.messageHex)
        #expect(Hex.encode(key.authenticationCode(message)) == vector.sha1)
        #expect(Hex.encode(key.authenticationCode(message)) == vector.sha1)
    }

    @Test("reuse never carries state from one message to the next", arguments: HashAlgorithm.allCases)
    func noCarryOver(_ algorithm: HashAlgorithm) {
        let secret = Array("rotating-secret".utf8)
        let key = HMACKey(algorithm, key: secret)
        for length in [0, 1, 55, 56, 64, 127, 128, 1000] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ length) }
            #expect(key.authenticationCode(message) == HMAC.authenticationCode(algorithm, key: secret, message: message))
        }
    }

    @Test("empty key and empty message give the one-shot result", arguments: HashAlgorithm.allCases)
    func emptyInputs(_ algorithm: HashAlgorithm) {
        let key = HMACKey(algorithm, key: [])
        #expect(key.authenticationCode([]) == HMAC.authenticationCode(algorithm, key: [], message: []))
        #expect(key.authenticationCode([1, 2, 3]) == HMAC.authenticationCode(algorithm, key: [], message: [1, 2, 3]))
    }

    @Test("concurrent callers each get their own message's code")
    func concurrentUse() async {
        let secret = Array("shared".utf8)
        let key = HMACKey(.sha256, key: secret)
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for task in 0..<16 {
                group.addTask {
                    var mismatches = 0
                    for round in 0..<200 {
                        let message = Array("task \(task) round \(round)".utf8)
                        if key.authenticationCode(message) != HMAC.authenticationCode(.sha256, key: secret, message: message) {
                            mismatches += 1
                        }
                    }
                    return mismatches
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test("a prepared key never shows its bytes when printed, reflected or dumped")
    func redacted() {
        let key = HMACKey(.sha256, key: Array("s3cr3t-key".utf8))
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains("115") && !dumped.contains("s3cr3t"), "\(dumped)")
        #expect(!"\(key)".contains("115"))
        #expect(Mirror(reflecting: key).children.map(\.label) == ["algorithm"])
    }
}
