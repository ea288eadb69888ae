import Testing
import PayhookCore

@Suite("ASCII string helpers")
struct StringASCIITests {
    @Test("blank means what trimming would leave empty: only spaces, tabs, CR and LF", arguments: [
        "", " ", "\t\r\n ", "a", " a ", "\u{0B}", "\u{A0}", "\u{3000}", "x\n",
    ])
    func blankMatchesTrimming(_ text: String) {
        #expect(text.isASCIIBlank == text.trimmingASCIIWhitespace().isEmpty)
    }

    @Test("trimming removes only ASCII whitespace at both ends")
    func trimming() {
        #expect(" \t a b \r\n".trimmingASCIIWhitespace() == "a b")
        #expect("\u{A0}a\u{A0}".trimmingASCIIWhitespace() == "\u{A0}a\u{A0}")
        #expect(" \t".isASCIIBlank)
        #expect(!"\u{0B}".isASCIIBlank)
    }
}
