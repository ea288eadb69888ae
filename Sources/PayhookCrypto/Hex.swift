/// Base-16 text, as used by Mercado Pago signatures and Adyen HMAC keys.
public enum Hex {
    /// Encodes `bytes` as lowercase hex, two characters per byte.
    public static func encode(_ bytes: [UInt8]) -> String {
        // Written straight into the String's storage: one allocation, no intermediate array.
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            let digits: StaticString = "0123456789abcdef"
            for (index, byte) in bytes.enumerated() {
                text[2 * index] = digits.utf8Start[Int(byte >> 4)]
                text[2 * index + 1] = digits.utf8Start[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }

    /// Decodes hex text; upper- and lowercase digits are both accepted.
    ///
    /// No whitespace, prefix (`0x`) or separators are allowed: callers trim first.
    /// - Throws: ``EncodingError`` with `oddLength` or `invalidCharacter` (and its offset).
    public static func decode(_ text: String) throws(EncodingError) -> [UInt8] {
        // Over the text's own UTF-8 storage: Mercado Pago's `v1` is decoded for every delivery.
        var text = text
        let decoded: Result<[UInt8], EncodingError> = text.withUTF8 { characters in
            guard characters.count % 2 == 0 else { return .failure(EncodingError(encoding: "hex", code: .oddLength)) }
            var bytes = [UInt8]()
            bytes.reserveCapacity(characters.count / 2)
            var index = 0
            while index < characters.count {
                guard let high = nibble(characters[index]) else {
                    return .failure(EncodingError(encoding: "hex", code: .invalidCharacter, offset: index))
                }
                guard let low = nibble(characters[index + 1]) else {
                    return .failure(EncodingError(encoding: "hex", code: .invalidCharacter, offset: index + 1))
                }
                bytes.append(high << 4 | low)
                index += 2
            }
            return .success(bytes)
        }
        return try decoded.get()
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
