import Foundation
import PayhookCore
import Testing
@testable import PayhookProviders

/// Orders in the shape Mercado Pago publishes them: `country_code`, decimal-string amounts and
/// no `currency` (fixture `mercadopago-order-documented.json`; source in docs/providers.md).
@Suite("Mercado Pago order currency")
struct MercadoPagoOrderCurrencyTests {
    /// The documented order with another `country_code` and amount, still without `currency`.
    static func documented(country: String, amount: String) throws -> [UInt8] {
        var text = String(decoding: try payload("mercadopago-order-documented"), as: UTF8.self)
        text = text.replacingOccurrences(of: #""country_code": "ARG""#, with: #""country_code": "\#(country)""#)
        text = text.replacingOccurrences(of: #""200.00""#, with: #""\#(amount)""#)
        return Array(text.utf8)
    }

    @Test("the documented order without currency decodes in its site's currency, not dead-lettered")
    func documentedOrder() throws {
        let order = try MercadoPagoOrderDecoder.decode(payload("mercadopago-order-documented"))
        #expect(order.amount == (try Money(minorUnits: 20000, currency: "ARS")))
        #expect(order.status == .pending)
        let payment = try #require(order.payments.first)
        #expect(payment.amount == (try Money(minorUnits: 20000, currency: "ARS")))
        #expect(payment.status == .pending)
    }

    @Test("each site's country code, in alpha-3, alpha-2 or site id, gives its currency and ISO minor units", arguments: [
        ("ARG", "200.00", "ARS", Int64(20000)), ("AR", "200.00", "ARS", 20000), ("MLA", "200.00", "ARS", 20000),
        ("BRA", "100.10", "BRL", 10010), ("BR", "100.10", "BRL", 10010),
        ("MEX", "350.50", "MXN", 35050), ("MX", "350.50", "MXN", 35050),
        ("CHL", "15000", "CLP", 15000), ("CL", "15000.00", "CLP", 15000), ("MLC", "15000", "CLP", 15000),
        ("COL", "42000.00", "COP", 4_200_000), ("CO", "42000", "COP", 4_200_000),
        ("PER", "99.90", "PEN", 9990), ("PE", "99.90", "PEN", 9990),
        ("URY", "1250.25", "UYU", 125_025), ("uy", "1250.25", "UYU", 125_025),
    ])
    func site(country: String, amount: String, currency: String, minor: Int64) throws {
        let order = try MercadoPagoOrderDecoder.decode(Self.documented(country: country, amount: amount))
        #expect(order.amount == (try Money(minorUnits: minor, currency: currency)))
        #expect(order.payments.first?.amount == (try Money(minorUnits: minor, currency: currency)))
    }

    @Test("an amount finer than the currency's minor unit is refused, never rounded")
    func unrepresentable() throws {
        #expect(throws: PayloadError(provider: .mercadopago, code: .unrepresentableAmount, field: "transactions.payments[0].amount")) {
            _ = try MercadoPagoOrderDecoder.decode(Self.documented(country: "CHL", amount: "15000.50"))
        }
        #expect(throws: PayloadError(provider: .mercadopago, code: .unrepresentableAmount, field: "transactions.payments[0].amount")) {
            _ = try MercadoPagoOrderDecoder.decode(Self.documented(country: "ARG", amount: "200.005"))
        }
        #expect(PayloadError(provider: .mercadopago, code: .unrepresentableAmount, field: "total_amount").description
            .contains("never rounded"))
    }

    @Test("the account's configured currency replaces the site's; the order's own currency wins over both")
    func override() throws {
        let order = try MercadoPagoOrderDecoder.decode(Self.documented(country: "ARG", amount: "200.00"), currencyOverride: "usd")
        #expect(order.amount == (try Money(minorUnits: 20000, currency: "USD")))
        let declared = try MercadoPagoOrderDecoder.decode(payload("mercadopago-order-processed"), currencyOverride: "USD")
        #expect(declared.amount?.currency == "BRL")
    }

    @Test("an order whose site is unknown and no currency is configured is refused with a clear error")
    func unknownSite() throws {
        let expected = PayloadError(provider: .mercadopago, code: .unknownCurrency, field: "country_code")
        #expect(throws: expected) {
            _ = try MercadoPagoOrderDecoder.decode(Self.documented(country: "VEN", amount: "200.00"))
        }
        #expect(expected.description.contains("country_code"))
        let configured = try MercadoPagoOrderDecoder.decode(Self.documented(country: "VEN", amount: "200.00"), currencyOverride: "USD")
        #expect(configured.amount == (try Money(minorUnits: 20000, currency: "USD")))
    }
}
