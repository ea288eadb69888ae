import Foundation
import Testing
@testable import PayhookCore

@Suite("WebhookRequest")
struct WebhookRequestTests {
    func request(query: String, headers: [(String, String)] = []) -> WebhookRequest {
        WebhookRequest(provider: .mercadopago, account: nil, rawQuery: query,
                       headers: headers.map { (name: $0.0, value: $0.1) }, body: [],
                       remoteAddress: "127.0.0.1", receivedAt: Date(timeIntervalSince1970: 0))
    }

    @Test("query parameters are found by exact name and percent-decoded, the raw query kept as sent",
          arguments: [
              ("data.id=123&type=payment", "data.id", "123"),
              ("type=payment&data.id=ORD%2B1", "data.id", "ORD+1"),
              ("data.id=a+b", "data.id", "a b"),
              ("data.id=&x=1", "data.id", ""),
              ("flag&data.id=9", "flag", ""),
              ("data%2Eid=7", "data.id", "7"),
              ("x=1&&data.id=5", "data.id", "5"),
              ("data.idx=1", "data.id", nil),
              ("", "data.id", nil),
          ] as [(String, String, String?)])
    func queryParameters(query: String, name: String, expected: String?) {
        let request = request(query: query)
        #expect(request.queryParameter(name) == expected)
        #expect(request.rawQuery == query)
    }

    @Test("header lookup ignores case and returns the first value")
    func headers() {
        let request = request(query: "", headers: [("X-Signature", "a"), ("x-signature", "b"), ("Content-Type", "c")])
        #expect(request.header("x-SIGNATURE") == "a")
        #expect(request.header("content-type") == "c")
        #expect(request.header("missing") == nil)
    }
}
