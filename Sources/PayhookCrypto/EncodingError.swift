/// Why hex or base64 text could not be decoded.
///
/// The description names the encoding, the problem and, where useful, the offset of the first
/// bad character, but never the text itself: the text may be a secret key or a signature.
public struct EncodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The closed set of decoding failures.
    public enum Code: String, Sendable {
        /// Hex text with an odd number of characters.
        case oddLength = "odd_length"
        /// Base64 text whose length is not a multiple of four.
        case invalidLength = "invalid_length"
        /// A character outside the alphabet.
        case invalidCharacter = "invalid_character"
        /// `=` somewhere other than the last one or two positions.
        case invalidPadding = "invalid_padding"
        /// Base64 whose unused trailing bits are not zero (a second spelling of the same bytes).
        case nonCanonical = "non_canonical"
    }

    /// Which encoding was being decoded (`hex` or `base64`).
    public let encoding: String
    /// What is wrong.
    public let code: Code
    /// Offset, in UTF-8 bytes, of the first offending character, when one can be named.
    public let offset: Int?

    /// Creates an error; `offset` is a position, never content.
    public init(encoding: String, code: Code, offset: Int? = nil) {
        self.encoding = encoding
        self.code = code
        self.offset = offset
    }

    /// For example `invalid hex: invalid_character at offset 5`.
    public var description: String {
        if let offset {
            return "invalid \(encoding): \(code.rawValue) at offset \(offset)"
        }
        return "invalid \(encoding): \(code.rawValue)"
    }
}
