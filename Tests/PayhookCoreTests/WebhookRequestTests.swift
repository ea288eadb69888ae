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
              ("data%2Eid=1&data.id=2", "data.id", "1"),
              ("data.id=2&data%2Eid=1", "data.id", "2"),
              ("\u{212A}=kelvin", "K", "kelvin"),
              ("", "data.id", nil),
          ] as [(String, String, String?)])
    func queryParameters(query: String, name: String, expected: String?) {
        let request = request(query: query)
        #expect(request.queryParameter(name) == expected)
        #expect(request.rawQuery == query)
    }

    @Test("the byte-level lookup answers only when it agrees with decoding every key",
          arguments: ["data.id", "type", "K", "a b", "", "d\u{E9}j\u{E0}"])
    func plainLookupAgreesWithDecoding(name: String) {
        let queries = [
            "data.id=123&type=payment", "type=payment&data.id=ORD%2B1", "data.id=a+b", "data.id=&x=1", "flag&data.id=9",
            "data%2Eid=7", "x=1&&data.id=5", "data.idx=1", "", "&", "=", "==", "type", "type=", "=type",
            "data%2Eid=1&data.id=2", "data.id=2&data%2Eid=1", "\u{212A}=kelvin", "K=1&\u{212A}=2", "a+b=1", "a%20b=2",
            "d\u{E9}j\u{E0}=1", "de\u{301}j\u{E0}=2", "type=a&type=b", "%=1&type=x", "data.id=%ZZ",
        ]
        for query in queries {
            let general = WebhookRequest.decodedQueryParameter(name, in: query)
            if let fast = WebhookRequest.plainQueryParameter(name, in: query) {
                #expect(fast == general, "query \(query) name \(name)")
            }
            #expect(request(query: query).queryParameter(name) == general, "query \(query) name \(name)")
        }
    }

    @Test("header lookup ignores case and returns the first value")
    func headers() {
        let request = request(query: "", headers: [("X-Signature", "a"), ("x-signature", "b"), ("Content-Type", "c")])
        #expect(request.header("x-SIGNATURE") == "a")
        #expect(request.header("content-type") == "c")
        #expect(request.header("missing") == nil)
    }
}
