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
        // Over the text's own UTF-8 storage, into one output array: signatures are decoded
        // for every delivery, and copying the characters and their values into arrays first
        // showed in the ingest profile.
        var text = text
        let decoded: Result<[UInt8], EncodingError> = text.withUTF8 { characters in
            let count = characters.count
            guard count % 4 == 0 else { return .failure(EncodingError(encoding: "base64", code: .invalidLength)) }
            guard count > 0 else { return .success([]) }
            var padding = 0
            if characters[count - 1] == UInt8(ascii: "=") { padding += 1 }
            if characters[count - 2] == UInt8(ascii: "=") {
                guard padding == 1 else {
                    // "x=A" style: a pad followed by data.
                    return .failure(EncodingError(encoding: "base64", code: .invalidPadding, offset: count - 2))
                }
                padding += 1
            }
            let dataCount = count - padding
            return reverse.withUnsafeBufferPointer { table in
                for offset in 0..<dataCount where table[Int(characters[offset])] == 0xFF {
                    let code: EncodingError.Code = characters[offset] == UInt8(ascii: "=") ? .invalidPadding : .invalidCharacter
                    return .failure(EncodingError(encoding: "base64", code: code, offset: offset))
                }
                func value(_ offset: Int) -> UInt8 { table[Int(characters[offset])] }
                var bytes = [UInt8]()
                bytes.reserveCapacity(dataCount * 3 / 4)
                var index = 0
                while index + 4 <= dataCount {
                    let group = UInt32(value(index)) << 18 | UInt32(value(index + 1)) << 12
                        | UInt32(value(index + 2)) << 6 | UInt32(value(index + 3))
                    bytes.append(UInt8(group >> 16 & 0xFF))
                    bytes.append(UInt8(group >> 8 & 0xFF))
                    bytes.append(UInt8(group & 0xFF))
                    index += 4
                }
                switch dataCount - index {
                case 2:
                    guard value(index + 1) & 0x0F == 0 else {
                        return .failure(EncodingError(encoding: "base64", code: .nonCanonical, offset: index + 1))
                    }
                    bytes.append(value(index) << 2 | value(index + 1) >> 4)
                case 3:
                    guard value(index + 2) & 0x03 == 0 else {
                        return .failure(EncodingError(encoding: "base64", code: .nonCanonical, offset: index + 2))
                    }
                    bytes.append(value(index) << 2 | value(index + 1) >> 4)
                    bytes.append(value(index + 1) << 4 | value(index + 2) >> 2)
                default:
                    break
                }
                return .success(bytes)
            }
        }
        return try decoded.get()
    }
}
