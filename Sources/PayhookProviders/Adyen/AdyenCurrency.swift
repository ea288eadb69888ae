public import PayhookCore

/// Adyen's minor units, which are not always ISO 4217's: the one conversion between the
/// `amount.value` Adyen sends and accepts and payhook's ISO minor units.
///
/// payhook stores, compares and reports ISO minor units everywhere (``Money``); the Adyen
/// decoder and charge client convert here, at the boundary. Where Adyen counts more decimals
/// than ISO (CLP: 2 at Adyen, 0 in ISO), an Adyen value that is not a whole ISO unit cannot be
/// represented and is refused; where it counts fewer (CVE: 0 at Adyen, 2 in ISO), an ISO
/// amount with a fraction cannot be sent and is refused. Money is never rounded.
///
/// Sources (docs/providers.md, "Adyen currency exponents"):
/// - https://docs.adyen.com/development-resources/currency-codes (the table; CLP 2 and CVE 0
///   "differ from standard");
/// - Adyen/adyen-java-api-library `src/main/java/com/adyen/util/Util.java` `getDecimalPlaces`
///   (zero- and three-decimal lists, 2 for every other code);
/// - Adyen/adyen-web `packages/lib/src/utils/constants/currency-decimals.ts` (the same lists,
///   plus MRO at one decimal, and ISK at zero: UNCONFIRMED, see ``exponent(of:)``).
public enum AdyenCurrency {
    /// Currencies Adyen counts without decimals.
    static let zeroDecimals: Set<String> = [
        "CVE", "DJF", "GNF", "IDR", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    /// Currencies Adyen counts with three decimals (the same as ISO 4217).
    static let threeDecimals: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]
    /// The obsolete Mauritanian ouguiya, one decimal at Adyen (adyen-web; the Java library
    /// gives 2).
    static let oneDecimal: Set<String> = ["MRO"]
    /// ISO currencies whose exponent is not 2 and that no Adyen source lists: which exponent
    /// Adyen would use is unknown, so amounts in them are refused rather than guessed.
    static let unlisted: Set<String> = ["BIF", "CLF", "UYI", "UYW"]

    /// Decimal places of Adyen's minor unit for `currency`; `nil` when no Adyen source lists it.
    ///
    /// ISK is 2: Adyen's table and its Java library count two decimals (ISO 4217 says 0);
    /// adyen-web counts none. UNCONFIRMED in docs/providers.md.
    public static func exponent(of currency: String) -> Int? {
        if unlisted.contains(currency) { return nil }
        if zeroDecimals.contains(currency) { return 0 }
        if threeDecimals.contains(currency) { return 3 }
        if oneDecimal.contains(currency) { return 1 }
        return 2
    }

    /// An Adyen `amount` as ISO money.
    /// - Throws: ``AdyenAmountError`` for a currency that is not a code or that Adyen's table
    ///   does not list, and for a value that is not a whole number of ISO minor units (CLP
    ///   `12345` is 123.45 pesos; ISO has no centavos).
    public static func isoMoney(adyenValue value: Int64, currency: String) throws(AdyenAmountError) -> Money {
        let code = currency.uppercased()
        let (adyen, iso) = try exponents(code)
        let units: Int64
        if adyen >= iso {
            let divisor = power(adyen - iso)
            guard value % divisor == 0 else { throw .notRepresentable(currency: code) }
            units = value / divisor
        } else {
            let (product, overflow) = value.multipliedReportingOverflow(by: power(iso - adyen))
            guard !overflow else { throw .outOfRange(currency: code) }
            units = product
        }
        do { return try Money(minorUnits: units, currency: code) } catch { throw .invalidCurrency }
    }

    /// The `amount.value` Adyen expects for ISO money.
    /// - Throws: ``AdyenAmountError`` for a currency Adyen's table does not list and for an
    ///   amount Adyen cannot express (CVE 1.50: Adyen counts whole escudos).
    public static func adyenValue(of money: Money) throws(AdyenAmountError) -> Int64 {
        let (adyen, iso) = try exponents(money.currency)
        if iso >= adyen {
            let divisor = power(iso - adyen)
            guard money.minorUnits % divisor == 0 else { throw .notRepresentable(currency: money.currency) }
            return money.minorUnits / divisor
        }
        let (product, overflow) = money.minorUnits.multipliedReportingOverflow(by: power(adyen - iso))
        guard !overflow else { throw .outOfRange(currency: money.currency) }
        return product
    }

    private static func exponents(_ code: String) throws(AdyenAmountError) -> (adyen: Int, iso: Int) {
        guard code.utf8.count == 3, code.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else { throw .invalidCurrency }
        guard let adyen = exponent(of: code) else { throw .unsupportedCurrency(code) }
        return (adyen, CurrencyExponent.of(code))
    }

    private static func power(_ exponent: Int) -> Int64 {
        var result: Int64 = 1
        for _ in 0..<exponent { result *= 10 }
        return result
    }
}

/// Why an amount could not cross the boundary between Adyen's minor units and ISO's.
public enum AdyenAmountError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidCurrency
    /// No Adyen source lists the currency's exponent.
    case unsupportedCurrency(String)
    /// The amount needs more decimals than the other side counts; it would have to be rounded.
    case notRepresentable(currency: String)
    case outOfRange(currency: String)

    public var description: String {
        switch self {
        case .invalidCurrency: "currency must be a three-letter ISO 4217 code"
        case .unsupportedCurrency(let code): "\(code) is not in Adyen's currency table"
        case .notRepresentable(let code):
            "the \(code) amount cannot be expressed exactly in both Adyen's and ISO 4217's minor units; payhook does not round money"
        case .outOfRange(let code): "the \(code) amount is out of range"
        }
    }
}
