import Foundation

/// Loads a vector file from this target's `Fixtures/` (copies of the repository's vectors).
func loadFixture<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
    guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures") else {
        throw CocoaError(.fileNoSuchFile)
    }
    return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
}

/// `Fixtures/adyen.json`: vectors published by Adyen's official libraries.
struct AdyenVectorFile: Decodable {
    struct Item: Decodable, Sendable {
        let pspReference: String
        let originalReference: String
        let merchantAccountCode: String
        let merchantReference: String
        let value: String
        let currency: String
        let eventCode: String
        let success: String
    }

    struct Vector: Decodable, Sendable, CustomStringConvertible {
        let name: String
        let kind: String
        let hmacKey: String
        let signingString: String?
        let item: Item?
        let bodyBase64: String?
        let expected: String
        var description: String { name }
    }

    let vectors: [Vector]

    static func load() throws -> [Vector] { try loadFixture("adyen", as: AdyenVectorFile.self).vectors }
    static func standard() throws -> [Vector] { try load().filter { $0.kind == "standard" } }
    static func header() throws -> [Vector] { try load().filter { $0.kind == "header" } }
}

/// `Fixtures/mercadopago.json`: vectors computed from the official SDK's fixtures.
struct MercadoPagoVectorFile: Decodable {
    struct Vector: Decodable, Sendable, CustomStringConvertible {
        let name: String
        let secret: String
        let dataId: String?
        let xRequestId: String?
        let ts: String
        let manifest: String
        let expectedV1: String
        let xSignature: String
        var description: String { name }
    }

    let vectors: [Vector]

    static func load() throws -> [Vector] { try loadFixture("mercadopago", as: MercadoPagoVectorFile.self).vectors }
}
