import Foundation
import Testing
@testable import PayhookProviders

@Suite("Provider API requests")
struct ProviderAPIRequestTests {
    @Test("HTTP statuses map to error kinds row by row", arguments: [
        (200, ProviderAPIError.Kind?.none), (201, nil),
        (404, .notFound), (401, .unauthorized), (403, .unauthorized),
        (429, .unavailable), (500, .unavailable), (502, .unavailable), (503, .unavailable), (504, .unavailable),
        (400, .invalidResponse), (409, .invalidResponse), (422, .invalidResponse), (302, .invalidResponse),
    ])
    func statusRow(status: Int, expected: ProviderAPIError.Kind?) {
        #expect(ProviderAPIError.forStatus(status, operation: "test GET /x")?.kind == expected)
    }

    @Test("ids are escaped to one path segment", arguments: [
        ("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3", "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"),
        ("1ed768bb-e88a_4636.91ae~x", "1ed768bb-e88a_4636.91ae~x"),
        ("a/b", "a%2Fb"), ("a b", "a%20b"), ("a?b#c", "a%3Fb%23c"), ("100%", "100%25"), ("ñ", "%C3%B1"),
    ])
    func escaping(id: String, expected: String) {
        #expect(ProviderAPIRequest.pathSegment(id) == expected)
    }

    @Test("paths join the base URL with or without a trailing slash")
    func joining() throws {
        for base in ["http://127.0.0.1:8099/mercadopago", "http://127.0.0.1:8099/mercadopago/"] {
            let url = try ProviderAPIRequest.url(base: try #require(URL(string: base)), path: "/v1/orders/a%2Fb", operation: "t")
            #expect(url.absoluteString == "http://127.0.0.1:8099/mercadopago/v1/orders/a%2Fb")
        }
        #expect(ProviderAPIRequest.basePath(try #require(URL(string: "https://api-services.pxp.io/api/v1/"))) == "/api/v1")
        #expect(ProviderAPIRequest.basePath(try #require(URL(string: "https://api.mercadopago.com"))) == "")
    }

    @Test("empty and relative ids are refused before any request", arguments: ["", ".", ".."])
    func badIDs(id: String) {
        #expect(throws: ProviderAPIError.self) { try ProviderAPIRequest.checkID(id, operation: "t") }
    }
}
