import Testing
@testable import PayhookProviders

@Suite("PXP request signing")
struct PXPRequestSignerTests {
    // Expected values computed independently with Python's standard library:
    //   import hmac, hashlib, base64
    //   m = b'1747731062' + b'4f0e1c2a-9b7d-4e3f-8a21-6c5d0b9e7f13' + b'GET' \
    //       + b'/api/v1/transactions/1ed768bb-e88a-4636-91ae-67927ccbb02b' + b''
    //   base64.b64encode(hmac.new(b'pxp-token-value-123', m, hashlib.sha256).digest())
    // and the same with b'POST', b'/api/v1/transactions' and b'{"merchant":"PAYHOOK-1"}'.
    @Test("the signature is base64 HMAC-SHA256 of timestamp, request id, method, path and body", arguments: [
        ("GET", "/api/v1/transactions/1ed768bb-e88a-4636-91ae-67927ccbb02b", "",
         "R4qIVooM7kpqkoNTr9dyMZcNmIwi9taEaAubosGE4cA="),
        ("POST", "/api/v1/transactions", #"{"merchant":"PAYHOOK-1"}"#,
         "vjm1S1ThzCNO87VXHUYMMY8Cad6maA1Lv6JdeYMXdRE="),
    ])
    func vector(method: String, path: String, body: String, expected: String) {
        let signature = PXPRequestSigner.signature(
            tokenValue: "pxp-token-value-123", timestamp: "1747731062",
            requestID: "4f0e1c2a-9b7d-4e3f-8a21-6c5d0b9e7f13", method: method, path: path, body: Array(body.utf8))
        #expect(signature == expected)
    }

    @Test("the Authorization header is PXP-UST1 tokenId:timestamp:signature")
    func header() {
        #expect(PXPRequestSigner.authorization(tokenID: "tok-1", timestamp: "1747731062", signature: "abc=")
                == "PXP-UST1 tok-1:1747731062:abc=")
    }

    @Test("a different token value gives a different signature")
    func keyMatters() {
        let a = PXPRequestSigner.signature(tokenValue: "a", timestamp: "1", requestID: "r", method: "GET", path: "/", body: [])
        let b = PXPRequestSigner.signature(tokenValue: "b", timestamp: "1", requestID: "r", method: "GET", path: "/", body: [])
        #expect(a != b)
    }
}
