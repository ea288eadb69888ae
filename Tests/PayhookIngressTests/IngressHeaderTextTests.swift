import PayhookCore
import PayhookProviders
import Testing
import PayhookTestSupport
@testable import PayhookIngress

@Suite("Ingress header text")
struct IngressHeaderTextTests {
    /// The rule `isJSON` implements, written the plain way.
    static func referenceIsJSON(_ contentType: String) -> Bool {
        let media = (contentType.firstIndex(of: ";").map { contentType[..<$0] } ?? Substring(contentType))
            .trimmingASCIIWhitespace().asciiLowercased()
        return media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
    }

    @Test("JSON media types are recognised as the plain rule says", arguments: [
        "application/json", "Application/JSON", " application/json ", "application/json; charset=utf-8",
        "application/json;charset=UTF-8", "\tapplication/json\t;x", "application/vnd.api+json", "application/+json",
        "APPLICATION/PROBLEM+JSON; q=1", "application/jsonx", "application/json+", "text/json", "application/xml",
        "application", "application/", "+json", "", ";", " ; application/json", "application/x+json ;",
        "application/js on", "application/json\u{301}", "application/\u{301}x+json", "application/x\u{600}+json",
        "applicatión/json", "application/x+jsoN",
    ])
    func contentTypes(_ contentType: String) {
        #expect(WebhookIngress.isJSON(contentType) == Self.referenceIsJSON(contentType))
    }

    @Test("webhook routes split as the plain Character split does", arguments: [
        "/webhooks/adyen", "/webhooks/adyen/acme", "/webhooks/", "/webhooks", "/webhooks/adyen/", "/webhooks/a/b/c",
        "//webhooks/x", "webhooks/x", "/webhooksx/adyen", "/Webhooks/adyen", "/webhooks//", "/", "",
        "/webhooks/pxp/ac-me_1", "/webhooks/é/x", "/webhooks/\u{301}adyen", "/webhooks\u{301}/adyen",
    ])
    func routes(_ path: String) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let expected: (provider: Substring, account: Substring?)? =
            segments.count >= 3 && segments.count <= 4 && segments[0].isEmpty && segments[1] == "webhooks"
            ? (segments[2], segments.count == 4 ? segments[3] : nil) : nil
        let actual = WebhookIngress.webhookRoute(path)
        #expect(actual?.provider == expected?.provider)
        #expect(actual?.account == expected?.account)
        #expect((actual == nil) == (expected == nil))
    }

    @Test("stored headers are a JSON object with sorted keys, content type included and escaped where needed")
    func headersJSON() {
        #expect(WebhookIngress.headersJSON([:], contentType: nil) == "{}")
        #expect(WebhookIngress.headersJSON([:], contentType: "application/json") == #"{"content-type":"application/json"}"#)
        #expect(WebhookIngress.headersJSON(["x-signature": "ts=1,v1=ab", "x-request-id": "r-1"], contentType: "application/json")
                == #"{"content-type":"application/json","x-request-id":"r-1","x-signature":"ts=1,v1=ab"}"#)
        #expect(WebhookIngress.headersJSON(["content-type": "text/plain", "a": "b"], contentType: "application/json")
                == #"{"a":"b","content-type":"application/json"}"#)
        #expect(WebhookIngress.headersJSON(["content-type": "text/plain"], contentType: nil) == #"{"content-type":"text/plain"}"#)
        // The content type lands in its sorted place: last here, after names that sort before it.
        #expect(WebhookIngress.headersJSON(["b": "2", "a": "1"], contentType: "application/json")
                == #"{"a":"1","b":"2","content-type":"application/json"}"#)
        #expect(WebhookIngress.headersJSON(["a": "1", "d": "4"], contentType: "application/json")
                == #"{"a":"1","content-type":"application/json","d":"4"}"#)
        #expect(WebhookIngress.headersJSON(["x-q": "a\"b\\c\u{1}", "é": "ü"], contentType: nil)
                == #"{"x-q":"a\"b\\c\u0001","é":"ü"}"#)
    }
}
