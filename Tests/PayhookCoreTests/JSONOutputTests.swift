import Foundation
import Testing
import PayhookCore

/// The one ordered JSON writer, whose bytes the CLI's `--json`, the admin API and the emulator's
/// provider documents depend on.
@Suite("JSONOutput")
struct JSONOutputTests {
    @Test("members keep their order, numbers keep their text, strings get exactly RFC 8259's escapes")
    func exactBytes() {
        let document = JSONOutput.object([
            .init("z", .number("100.10")), .init("a", .int(-7)), .init("text", .string("q\"b\\n\n\r\t\u{1}\u{7f}é€😀")),
            .init("list", .array([.bool(true), .bool(false), .null, .raw("{\"k\":1}")])), .init("empty", .object([])),
        ])
        let expected = #"{"z":100.10,"a":-7,"text":"q\"b\\n\n\r\t\u0001"# + "\u{7f}é€😀" + #"","list":[true,false,null,{"k":1}],"empty":{}}"#
        #expect(document.rendered == expected)
        #expect(document.bytes == Array(expected.utf8))
    }

    @Test("optional values and timestamps: null when absent, RFC 3339 UTC with milliseconds")
    func optionalsAndTimestamps() {
        #expect(JSONOutput.optional(nil as String?) == .null)
        #expect(JSONOutput.optional(5 as Int64?) == .int(5))
        #expect(JSONOutput.timestamp(Date(timeIntervalSince1970: 1_742_472_000.125)).rendered == #""2025-03-20T12:00:00.125Z""#)
    }

    @Test("an object of optional members leaves the absent ones out, where null would be a value")
    func omittingAbsent() {
        let document = JSONOutput.object(omittingAbsent: [
            ("reference", .string("r-1")), ("previous", nil), ("amount", .number("12.50")), ("shopper", nil),
        ])
        #expect(document.rendered == #"{"reference":"r-1","amount":12.50}"#)
        #expect(JSONOutput.object(omittingAbsent: [("gone", nil)]).rendered == "{}")
    }
}
