/// JSON string literals for the JSON payhook writes by hand (log lines, stored headers, event
/// data, CLI `--json` output), where building the text directly is cheaper than an encoder.
public enum JSONString {
    /// `text` as a JSON string literal with the escapes RFC 8259 requires.
    public static func quote(_ text: String) -> String {
        // Most keys and values need no escaping: one scan, one copy.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `texts` as a JSON array of strings (`["a","b"]`), e.g. a bind for `jsonb_array_elements_text`.
    public static func array(_ texts: [String]) -> String {
        "[" + texts.map(quote).joined(separator: ",") + "]"
    }
}
