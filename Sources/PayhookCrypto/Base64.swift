/// Standard base64 (RFC 4648 §4, `+` and `/`, with `=` padding), as used by Adyen and PXP
/// signatures.
///
/// Decoding is strict on purpose: signatures arrive from producers that emit canonical
/// base64, so whitespace, the URL-safe alphabet, missing padding or non-zero trailing bits
/// mean the value is not what the provider sent, and are rejected rather than repaired.
public enum Base64 {
    private static let alphabet: [UInt8] =
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(value)
        }
        return table
    }()

    /// Encodes `bytes` with the standard alphabet and `=` padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = [UInt8]()
        text.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            text.append(alphabet[Int(group >> 18 & 0x3F)])
            text.append(alphabet[Int(group >> 12 & 0x3F)])
            text.append(alphabet[Int(group >> 6 & 0x3F)])
            text.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            text.append(alphabet[Int(group >> 18 & 0x3F)])
            text.append(alphabet[Int(group >> 12 & 0x3F)])
            text.append(contentsOf: Array("==".utf8))
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            text.append(alphabet[Int(group >> 18 & 0x3F)])
            text.append(alphabet[Int(group >> 12 & 0x3F)])
            text.append(alphabet[Int(group >> 6 & 0x3F)])
            text.append(UInt8(ascii: "="))
        default:
            break
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Decodes standard, padded base64.
    /// - Throws: ``EncodingError`` with `invalidLength` (not a multiple of 4),
    ///   `invalidCharacter`, `invalidPadding` or `nonCanonical`.
    public static func decode(_ text: String) throws(EncodingError) -> [UInt8] {
        let characters = Array(text.utf8)
        guard characters.count % 4 == 0 else {
            throw EncodingError(encoding: "base64", code: .invalidLength)
        }
        guard !characters.isEmpty else { return [] }

        var padding = 0
        if characters[characters.count - 1] == UInt8(ascii: "=") { padding += 1 }
        if characters[characters.count - 2] == UInt8(ascii: "=") {
            guard padding == 1 else {
                // "x=A" style: a pad followed by data.
                throw EncodingError(encoding: "base64", code: .invalidPadding, offset: characters.count - 2)
            }
            padding += 1
        }

        var values = [UInt8]()
        values.reserveCapacity(characters.count - padding)
        for (offset, character) in characters.prefix(characters.count - padding).enumerated() {
            let value = reverse[Int(character)]
            guard value != 0xFF else {
                let code: EncodingError.Code = character == UInt8(ascii: "=") ? .invalidPadding : .invalidCharacter
                throw EncodingError(encoding: "base64", code: code, offset: offset)
            }
            values.append(value)
        }

        var bytes = [UInt8]()
        bytes.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 4 <= values.count {
            let group = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12
                | UInt32(values[index + 2]) << 6 | UInt32(values[index + 3])
            bytes.append(UInt8(group >> 16 & 0xFF))
            bytes.append(UInt8(group >> 8 & 0xFF))
            bytes.append(UInt8(group & 0xFF))
            index += 4
        }
        switch values.count - index {
        case 2:
            guard values[index + 1] & 0x0F == 0 else {
                throw EncodingError(encoding: "base64", code: .nonCanonical, offset: index + 1)
            }
            bytes.append(values[index] << 2 | values[index + 1] >> 4)
        case 3:
            guard values[index + 2] & 0x03 == 0 else {
                throw EncodingError(encoding: "base64", code: .nonCanonical, offset: index + 2)
            }
            bytes.append(values[index] << 2 | values[index + 1] >> 4)
            bytes.append(values[index + 1] << 4 | values[index + 2] >> 2)
        default:
            break
        }
        return bytes
    }
}
