/// A JSON document the emulator writes: keys keep their order and numbers are written as the
/// exact text given, so amounts such as `100.10` reach the decoders digit for digit (a `Double`
/// through `JSONSerialization` could print `100.09999999999999`).
indirect enum JSONText: Sendable {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case object([(String, JSONText)])
    case array([JSONText])

    var bytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .string(let text): Self.writeString(text, into: &out)
        case .number(let text): out += text.utf8
        case .bool(let flag): out += (flag ? "true" : "false").utf8
        case .null: out += "null".utf8
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ text: String, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += "\\\"".utf8
            case UInt8(ascii: "\\"): out += "\\\\".utf8
            case 0x0A: out += "\\n".utf8
            case 0x0D: out += "\\r".utf8
            case 0x09: out += "\\t".utf8
            case 0..<0x20: out += "\\u00".utf8; out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
