import PayhookCore
import Testing

@Suite("JSONString")
struct JSONStringTests {
    @Test("an array of strings quotes and escapes each element")
    func array() {
        #expect(JSONString.array([]) == "[]")
        #expect(JSONString.array(["payment:adyen:1", #"say "hi""#, "a\\b", "line\nbreak"])
            == #"["payment:adyen:1","say \"hi\"","a\\b","line\nbreak"]"#)
    }

    @Test("needsEscaping is true exactly for control characters, quotes and backslashes, anywhere in the text")
    func needsEscaping() {
        for plain in ["", "abc", "ts=1,v1=ab", "é 🧾 ü", String(repeating: "x", count: 300), "\u{7F}"] {
            #expect(!JSONString.needsEscaping(plain), "\(plain)")
        }
        for escaped in ["\"", "a\\b", "\u{1}", "\n", String(repeating: "x", count: 300) + "\t", "é\""] {
            #expect(JSONString.needsEscaping(escaped), "\(escaped)")
        }
    }
}
