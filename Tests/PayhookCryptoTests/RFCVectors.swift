import Foundation
@testable import PayhookCrypto

/// The RFC vectors in `Fixtures/rfc-vectors.json`, loaded from the test bundle.
struct RFCVectors: Decodable {
    struct HMACCase: Decodable, Sendable, CustomStringConvertible {
        let name: String
        let keyHex: String
        let messageHex: String
        let sha256: String
        let sha512: String
        var description: String { name }
    }

    struct SHA1Case: Decodable, Sendable, CustomStringConvertible {
        let name: String
        let keyHex: String
        let messageHex: String
        let sha1: String
        var description: String { name }
    }

    struct DigestCase: Decodable, Sendable, CustomStringConvertible {
        let name: String
        let messageHex: String
        let sha1: String
        let sha256: String
        let sha512: String
        var description: String { name }
    }

    let hmac: [HMACCase]
    let hmacSHA1: [SHA1Case]
    let digests: [DigestCase]

    static func load() throws -> RFCVectors {
        guard let url = Bundle.module.url(forResource: "rfc-vectors", withExtension: "json", subdirectory: "Fixtures") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try JSONDecoder().decode(RFCVectors.self, from: Data(contentsOf: url))
    }
}
