/// JSON string literals for the JSON payhook writes by hand (log lines, stored headers, event
/// data, CLI `--json` output), where building the text directly is cheaper than an encoder.
public enum JSONString {
    /// `text` as a JSON string literal with the escapes RFC 8259 requires.
    public static func quote(_ text: String) -> String {
        // Most keys and values need no escaping: one scan, one copy.
        if !needsEscaping(text) { return "\"" + text + "\"" }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        out.append(text, escaping: { scalar in
            switch scalar {
            case "\"": "\\\""
            case "\\": "\\\\"
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            case _ where scalar.value < 0x20:
                "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: nil
            }
        })
        return out + "\""
    }

    /// Whether `quote` would escape anything in `text`: a control character, `"` or `\`.
    ///
    /// Scans the contiguous bytes with no early exit, which the compiler can keep branch-free;
    /// over a PXP delivery's kept headers it took a fifth of a `utf8.contains` closure's time
    /// (bench/README.md, "Figures behind code comments").
    public static func needsEscaping(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var found: UInt8 = 0
            for byte in bytes {
                found |= (byte < 0x20 ? 1 : 0) | (byte == UInt8(ascii: "\"") ? 1 : 0) | (byte == UInt8(ascii: "\\") ? 1 : 0)
            }
            return found != 0
        }
    }

    /// `texts` as a JSON array of strings (`["a","b"]`), e.g. a bind for `jsonb_array_elements_text`.
    public static func array(_ texts: [String]) -> String {
        "[" + texts.map(quote).joined(separator: ",") + "]"
    }
}
