import Testing
@testable import PayhookCrypto

@Suite("HMAC and digests")
struct HMACTests {
    @Test("HMAC-SHA256 matches RFC 4231", arguments: try RFCVectors.load().hmac)
    func sha256(_ vector: RFCVectors.HMACCase) throws {
        let code = HMAC.authenticationCode(.sha256, key: try Hex.decode(vector.keyHex), message: try Hex.decode(vector.messageHex))
        #expect(Hex.encode(code) == vector.sha256)
    }

    @Test("HMAC-SHA512 matches RFC 4231", arguments: try RFCVectors.load().hmac)
    func sha512(_ vector: RFCVectors.HMACCase) throws {
        let code = HMAC.authenticationCode(.sha512, key: try Hex.decode(vector.keyHex), message: try Hex.decode(vector.messageHex))
        #expect(Hex.encode(code) == vector.sha512)
    }

    @Test("HMAC-SHA1 matches RFC 2202", arguments: try RFCVectors.load().hmacSHA1)
    func sha1(_ vector: RFCVectors.SHA1Case) throws {
        let code = HMAC.authenticationCode(.sha1, key: try Hex.decode(vector.keyHex), message: try Hex.decode(vector.messageHex))
        #expect(Hex.encode(code) == vector.sha1)
    }

    @Test("SHA-256 is the default algorithm")
    func defaultAlgorithm() {
        let key = Array("key".utf8), message = Array("message".utf8)
        #expect(HMAC.authenticationCode(key: key, message: message) == HMAC.authenticationCode(.sha256, key: key, message: message))
    }

    @Test("empty key and empty message are handled, with the documented output length", arguments: HashAlgorithm.allCases)
    func emptyInputs(_ algorithm: HashAlgorithm) {
        let code = HMAC.authenticationCode(algorithm, key: [], message: [])
        #expect(code.count == algorithm.digestLength)
        // Known value for HMAC-SHA256("", ""), independent of OpenSSL.
        if algorithm == .sha256 {
            #expect(Hex.encode(code) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        }
    }

    @Test("digests match FIPS 180 vectors", arguments: try RFCVectors.load().digests)
    func digests(_ vector: RFCVectors.DigestCase) throws {
        let message = try Hex.decode(vector.messageHex)
        #expect(Hex.encode(Digest.hash(.sha1, message)) == vector.sha1)
        #expect(Hex.encode(Digest.hash(.sha256, message)) == vector.sha256)
        #expect(Hex.encode(Digest.hash(.sha512, message)) == vector.sha512)
    }
}
