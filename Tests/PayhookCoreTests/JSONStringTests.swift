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
}
