import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

@Suite("Decoding support")
struct DecodingSupportTests {
    @Test("decimal amounts parse exactly from strings and number text", arguments: [
        (#""100.10""#, "EUR", Int64(10010)),
        ("100.10", "EUR", 10010),
        ("100.1", "EUR", 10010),
        (#""1500""#, "JPY", 1500),
        ("1500", "JPY", 1500),
        (#""12.345""#, "BHD", 12345),
        ("0.001", "BHD", 1),
        ("4000.50", "ARS", 400_050),
        ("0.1", "EUR", 10),
        ("92233720368547758.07", "EUR", Int64.max),
    ])
    func decimalAmounts(json: String, currency: String, minorUnits: Int64) throws {
        let node = try PayloadNode.parse(Array(#"{"a":\#(json)}"#.utf8), provider: .pxp)["a"]
        #expect(try node.decimalMoney(currency: currency) == (try Money(minorUnits: minorUnits, currency: currency)))
    }

    @Test("amounts that cannot be exact are refused, naming the field", arguments: [
        ("1.5", "JPY"), ("1e3", "EUR"), (#""1,50""#, "EUR"), ("0.0001", "BHD"), ("true", "EUR"), (#""10""#, "EURO"),
    ])
    func refusedAmounts(json: String, currency: String) throws {
        let node = try PayloadNode.parse(Array(#"{"a":\#(json)}"#.utf8), provider: .pxp)["a"]
        #expect(throws: PayloadError(provider: .pxp, code: .invalidField, field: "a")) {
            try node.decimalMoney(currency: currency)
        }
    }

    @Test("integer minor units are taken as they are")
    func minorUnits() throws {
        let node = try PayloadNode.parse(Array(#"{"a":{"value":1500,"currency":"jpy"}}"#.utf8), provider: .adyen)["a"]
        let money = try node["value"].minorUnitsMoney(currency: try node["currency"].string())
        #expect(money == (try Money(minorUnits: 1500, currency: "JPY")))
    }

    @Test("a card expiry comes from its month and year fields as MM/YYYY, nil when either is absent or invalid", arguments: [
        (#"{"m":"3","y":"2030"}"#, "03/2030" as String?),
        (#"{"m":12,"y":30}"#, "12/2030"),
        (#"{"m":"3"}"#, nil),
        (#"{"y":"2030"}"#, nil),
        (#"{"m":"13","y":"2030"}"#, nil),
        (#"{"m":"","y":"2030"}"#, nil),
    ])
    func cardExpiry(json: String, expected: String?) throws {
        let node = try PayloadNode.parse(Array(json.utf8), provider: .adyen)
        #expect(try node.cardExpiry(month: "m", year: "y") == expected)
    }

    @Test("a card expiry field that is an object is refused, naming it, even when the other is absent")
    func cardExpiryRefusesObjects() throws {
        let node = try PayloadNode.parse(Array(#"{"y":{"year":2030}}"#.utf8), provider: .pxp)
        #expect(throws: PayloadError(provider: .pxp, code: .invalidField, field: "y")) {
            try node.cardExpiry(month: "m", year: "y")
        }
    }

    @Test("provider timestamps parse with offsets and any fraction length", arguments: [
        ("2025-02-24T15:20:56+01:00", 1_740_406_856.0),
        ("2025-02-24T14:20:56Z", 1_740_406_856.0),
        ("2025-02-24T09:20:56.500-0500", 1_740_406_856.5),
        ("2025-03-10T14:05:11.482Z", 1_741_615_511.482),
        ("2024-02-29T00:00:00Z", 1_709_164_800.0),
        ("1970-01-01T00:00:00Z", 0.0),
    ])
    func timestamps(text: String, epoch: Double) throws {
        let date = try #require(ProviderTimestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - epoch) < 0.000_5)
    }

    @Test("malformed timestamps are nil, not guesses", arguments: [
        "", "2025-02-24", "2025-02-24 15:20:56Z", "2025-13-01T00:00:00Z", "2025-02-24T15:20:56", "2025-02-24T15:20:56.Z",
        "2025-02-24T15:20:56+1", "yesterday",
    ])
    func badTimestamps(text: String) {
        #expect(ProviderTimestamp.parse(text) == nil)
    }

    @Test("error descriptions name provider and field but never a value from the body")
    func errorDescriptions() {
        let body = #"{"notificationItems":[{"NotificationRequestItem":{"pspReference":"SECRET-REF-1","eventCode":"REFUND","success":"true","merchantReference":"Jane Doe"}}]}"#
        do {
            _ = try AdyenEventDecoder.decode(body: Array(body.utf8))
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "adyen payload is missing required field notificationItems[0].NotificationRequestItem.amount.value")
            #expect(!error.description.contains("SECRET-REF-1"))
            #expect(!error.description.contains("Jane"))
        }
        #expect(PayloadError(provider: .pxp, code: .malformedJSON).description == "pxp payload is not a well-formed JSON object")
    }
}
