/// Recognises card numbers in text so that decoders can drop them.
///
/// Invariant 6: card numbers are never stored or logged. Decoders read only the fields they
/// know, but free-text fields (a refusal reason, a merchant reference) are still written by
/// people and systems that make mistakes, so every free-text value a canonical event carries
/// passes through ``scrubbed(_:)``. A value is PAN-like when it contains a run of 13–19 digits
/// (single spaces or dashes between them allowed) that does not start with 0 and passes the
/// Luhn check. Longer digit runs are not card numbers and are left alone.
///
/// Provider identifiers (tokens, pspReferences, payment ids) are not filtered: some are
/// all-digit strings of card-number length, and dropping one would lose the payment.
public enum CardDataFilter {
    /// Whether `text` contains something that looks like a full card number.
    public static func containsCardNumber(_ text: String) -> Bool {
        var run: [UInt8] = []
        var lastWasSeparator = false
        func runHasPAN() -> Bool {
            // Card numbers never start with 0 (that major industry identifier is not issued to
            // cards), which also keeps long runs of zeros, which are Luhn-valid, out.
            guard (13...19).contains(run.count), run[0] != 0 else { return false }
            return luhnValid(run[...])
        }
        for byte in text.utf8 {
            if byte >= 0x30, byte <= 0x39 {
                run.append(byte - 0x30)
                lastWasSeparator = false
            } else if (byte == 0x20 || byte == 0x2D), !run.isEmpty, !lastWasSeparator {
                lastWasSeparator = true
            } else {
                if runHasPAN() { return true }
                run.removeAll(keepingCapacity: true)
                lastWasSeparator = false
            }
        }
        return runHasPAN()
    }

    /// `text` unchanged, or `nil` when it is empty or contains a card number.
    ///
    /// The whole value is dropped rather than masked: a masked copy of a string that held a
    /// card number is still a string nobody asked for.
    public static func scrubbed(_ text: String?) -> String? {
        guard let text, !text.isEmpty, !containsCardNumber(text) else { return nil }
        return text
    }

    static func luhnValid(_ digits: ArraySlice<UInt8>) -> Bool {
        var sum = 0
        for (offset, digit) in digits.reversed().enumerated() {
            var value = Int(digit)
            if offset % 2 == 1 {
                value *= 2
                if value > 9 { value -= 9 }
            }
            sum += value
        }
        return sum % 10 == 0
    }
}
