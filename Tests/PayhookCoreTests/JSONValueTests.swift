import Testing
@testable import PayhookCore

@Suite("Strict JSON reader")
struct JSONValueTests {
    @Test("numbers keep their exact text", arguments: ["0", "1130", "-7", "12345678901234567890123", "1130.0", "1.5e3", "-0.25E-2"])
    func numbers(_ text: String) {
        #expect(JSONValue.parse(Array("{\"v\":\(text)}".utf8))?["v"] == .number(text))
    }

    @Test("strings decode escapes and surrogate pairs")
    func strings() {
        let json = #"{"s":"a\\b\/c\"d\n\u00e9\ud83d\ude00"}"#
        #expect(JSONValue.parse(Array(json.utf8))?["s"] == .string("a\\b/c\"d\né😀"))
    }

    @Test("invalid or ambiguous documents are refused", arguments: [
        "", " ", "{", "}", "{\"a\":1,}", "[1,]", "01", "1.", "-", ".5", "+1", "1e", "tru", "nul", "\"abc",
        "{\"a\":1}{", "{\"a\":1} x", "{\"a\":1,\"a\":2}", "\"\\ud800\"", "\"\\udc00\"", "\"\\x\"", "\"a\u{01}\"",
        "{a:1}", "'a'", "[1 2]",
    ])
    func refused(_ text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil)
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        #expect(JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) == nil)
        #expect(JSONValue.parse([0x22, 0xC3, 0xA9, 0x22]) == .string("é"))
    }

    @Test("nesting is bounded instead of exhausting the stack")
    func depth() {
        let shallow = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(JSONValue.parse(Array(shallow.utf8)) != nil)
        let deep = String(repeating: "[", count: 66) + String(repeating: "]", count: 66)
        #expect(JSONValue.parse(Array(deep.utf8)) == nil)
        #expect(JSONValue.parse(Array(repeating: UInt8(ascii: "["), count: 1_000_000)) == nil)
    }

    @Test("scalar text follows what a provider signs")
    func scalarText() {
        #expect(JSONValue.bool(true).scalarText == "true")
        #expect(JSONValue.number("10").scalarText == "10")
        #expect(JSONValue.null.scalarText == nil)
        #expect(JSONValue.array([]).scalarText == nil)
    }

    @Test("duplicate keys are refused in small and in very large objects, and member order does not affect equality")
    func duplicatesAmongManyKeys() {
        let many = (0..<20_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let unique = JSONValue.parse(Array("{\(many)}".utf8))
        #expect(unique?["k19999"] == .number("19999"))
        #expect(JSONValue.parse(Array("{\(many),\"k7\":1}".utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{"a":1,"b":2,"a":3}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{"a":1,"b":[2]}"#.utf8)) == JSONValue.parse(Array(#"{"b":[2],"a":1}"#.utf8)))
        #expect(JSONValue.parse(Array(#"{"a":1}"#.utf8)) != JSONValue.parse(Array(#"{"a":1,"b":2}"#.utf8)))
    }

    @Test("an exact integer is a number without fraction or exponent that fits 64 bits", arguments: [
        ("1999", Int64?.some(1999)), ("-7", -7), ("0", 0), ("9223372036854775807", Int64.max),
        ("9223372036854775808", nil), ("19.99", nil), ("1999.0", nil), ("2e3", nil), ("2E3", nil), ("\"1999\"", nil), ("true", nil),
    ])
    func exactInteger(text: String, expected: Int64?) throws {
        let value = try #require(JSONValue.parse(Array(text.utf8)))
        #expect(value.exactInteger == expected)
    }
}
