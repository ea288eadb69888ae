import Testing
@testable import PayhookCore

@Suite("Money")
struct MoneyTests {
    @Test("decimal strings parse exactly by the currency's exponent", arguments: [
        ("100.00", "EUR", Int64(10000)), ("100.5", "eur", 10050), ("0.01", "USD", 1),
        ("1000", "JPY", 1000), ("1000.000", "JPY", 1000), ("1.234", "BHD", 1234),
        ("12.3400", "USD", 1234), ("-5.25", "EUR", -525), ("92233720368547758.07", "EUR", Int64.max),
        ("19.99", "CLF", 199900),
    ])
    func parsesExactly(text: String, currency: String, expected: Int64) throws {
        let money = try Money.parse(decimal: text, currency: currency)
        #expect(money.minorUnits == expected)
        #expect(money.currency == currency.uppercased())
    }

    @Test("values that would need rounding, junk and overflow are refused", arguments: [
        ("1.234", "EUR", MoneyError.tooPrecise), ("1.5", "JPY", .tooPrecise), ("", "EUR", .malformedDecimal),
        ("1,00", "EUR", .malformedDecimal), ("1e3", "EUR", .malformedDecimal), ("1.", "EUR", .malformedDecimal),
        ("NaN", "EUR", .malformedDecimal), ("92233720368547758.08", "EUR", .outOfRange),
        ("1.00", "EURO", .invalidCurrency), ("1.00", "E1R", .invalidCurrency),
    ])
    func refuses(text: String, currency: String, expected: MoneyError) {
        #expect(throws: expected) { try Money.parse(decimal: text, currency: currency) }
    }

    @Test("decimal rendering round-trips", arguments: ["100.50 EUR", "7 JPY", "0.005 BHD", "-3.07 USD"])
    func rendersDecimal(pair: String) throws {
        let parts = pair.split(separator: " ").map(String.init)
        let money = try Money.parse(decimal: parts[0], currency: parts[1])
        #expect(money.decimalString == parts[0])
    }
}
