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

    @Test("trimming a range of bytes keeps what trimming the text keeps, inside that range", arguments: [
        "", " ", "\t\r\n ", "a", " a ", "\u{0B}x\u{0B}", "\u{A0}a\u{A0}", " ts = 1 ", "x\n",
    ])
    func bufferRangeMatchesTrimming(_ text: String) {
        let bytes = Array(("[" + text + "]").utf8)
        bytes.withUnsafeBufferPointer { buffer in
            let kept = buffer.trimmingASCIIWhitespace(1..<(buffer.count - 1))
            #expect(String(decoding: buffer[kept], as: UTF8.self) == text.trimmingASCIIWhitespace())
            #expect(kept.lowerBound >= 1 && kept.upperBound <= buffer.count - 1)
        }
    }

    @Test("appending with an escape table replaces the scalars it lists and copies every other one, non-ASCII included")
    func appendEscaping() {
        var text = "<"
        text.append("a&b é 🇨🇱 \u{0}") { scalar in
            switch scalar {
            case "&": "&amp;"
            case "\u{0}": "\\0"
            default: nil
            }
        }
        #expect(text == "<a&amp;b é 🇨🇱 \\0")
    }

    @Test("trimming removes only ASCII whitespace at both ends")
    func trimming() {
        #expect(" \t a b \r\n".trimmingASCIIWhitespace() == "a b")
        #expect("\u{A0}a\u{A0}".trimmingASCIIWhitespace() == "\u{A0}a\u{A0}")
        #expect(" \t".isASCIIBlank)
        #expect(!"\u{0B}".isASCIIBlank)
    }
}
