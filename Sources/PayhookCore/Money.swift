/// An amount of money: integer minor units of an ISO 4217 currency.
///
/// Never a `Double`: provider amounts arrive as decimal strings (`"100.00"`) and are parsed
/// exactly by `Money.parse(decimal:currency:)`, or as integer minor units (Adyen `value`).
public struct Money: Sendable, Hashable, Codable, CustomStringConvertible {
    public let minorUnits: Int64
    /// Upper-case ISO 4217 alphabetic code.
    public let currency: String

    public init(minorUnits: Int64, currency: String) throws(MoneyError) {
        let code = currency.uppercased()
        guard Money.isCurrencyCode(code) else { throw .invalidCurrency }
        self.minorUnits = minorUnits
        self.currency = code
    }

    /// Parses a decimal string exactly, scaled by the currency's exponent.
    ///
    /// `"100.5"` in EUR is 10050; `"1000"` in JPY is 1000; `"1.2345"` in EUR throws rather than
    /// rounding, because silently dropping precision would change the amount checked.
    public static func parse(decimal text: String, currency: String) throws(MoneyError) -> Money {
        let code = currency.uppercased()
        guard isCurrencyCode(code) else { throw .invalidCurrency }
        let exponent = CurrencyExponent.of(code)
        var digits = Substring(text.trimmingCharacters(in: .whitespaces))
        var negative = false
        if digits.first == "-" { negative = true; digits = digits.dropFirst() }
        else if digits.first == "+" { digits = digits.dropFirst() }
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        var fraction = parts.count > 1 ? parts[1] : ""
        guard !whole.isEmpty || !fraction.isEmpty,
              whole.allSatisfy(\.isASCIIDigit), fraction.allSatisfy(\.isASCIIDigit),
              !(parts.count > 1 && fraction.isEmpty)
        else { throw .malformedDecimal }
        while fraction.count > exponent, fraction.last == "0" { fraction = fraction.dropLast() }
        guard fraction.count <= exponent else { throw .tooPrecise }
        let padded = String(whole) + fraction + String(repeating: "0", count: exponent - fraction.count)
        var value: Int64 = 0
        for character in padded {
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (added, o2) = shifted.addingReportingOverflow(Int64(character.asciiValue! - 48))
            guard !o1, !o2 else { throw .outOfRange }
            value = added
        }
        return try Money(minorUnits: negative ? -value : value, currency: code)
    }

    /// The amount as a decimal string in major units (`10050 EUR` -> `"100.50"`).
    public var decimalString: String {
        let exponent = CurrencyExponent.of(currency)
        let magnitude = minorUnits.magnitude
        guard exponent > 0 else { return (minorUnits < 0 ? "-" : "") + String(magnitude) }
        var scale: UInt64 = 1
        for _ in 0..<exponent { scale *= 10 }
        let fraction = String(magnitude % scale)
        return (minorUnits < 0 ? "-" : "") + String(magnitude / scale) + "."
            + String(repeating: "0", count: exponent - fraction.count) + fraction
    }

    public var description: String { "\(decimalString) \(currency)" }

    static func isCurrencyCode(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }
    }
}

public enum MoneyError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidCurrency, malformedDecimal, tooPrecise, outOfRange

    public var description: String {
        switch self {
        case .invalidCurrency: "currency must be a three-letter ISO 4217 code"
        case .malformedDecimal: "amount is not a decimal number"
        case .tooPrecise: "amount has more decimal places than the currency allows"
        case .outOfRange: "amount is out of range"
        }
    }
}

/// Minor-unit exponents of ISO 4217 currencies that differ from the common 2.
public enum CurrencyExponent {
    static let zero: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND",
        "VUV", "XAF", "XOF", "XPF",
    ]
    static let three: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]
    static let four: Set<String> = ["CLF", "UYW"]

    /// Decimal places of the currency's minor unit (JPY 0, EUR 2, BHD 3).
    public static func of(_ currency: String) -> Int {
        if zero.contains(currency) { return 0 }
        if three.contains(currency) { return 3 }
        if four.contains(currency) { return 4 }
        return 2
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { asciiValue.map { $0 >= 48 && $0 <= 57 } ?? false }
}
