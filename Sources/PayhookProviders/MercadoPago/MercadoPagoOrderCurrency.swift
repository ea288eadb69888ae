import PayhookCore

/// The currency of a Mercado Pago order's amounts, and their exact conversion to ISO minor
/// units.
///
/// An order names its currency in `currency` when it has one (the Node SDK types it as
/// optional); the published answers carry only `country_code`. In that order of trust:
/// 1. the order's own `currency`;
/// 2. the operator's override for the account (`PAYHOOK_MERCADOPAGO_<ACCOUNT>_CURRENCY`,
///    else `PAYHOOK_MERCADOPAGO_CURRENCY`), for an account whose money is not its site's;
/// 3. the site's currency from ``MercadoPagoSite``.
/// With none of them an order that carries an amount is refused
/// (``PayloadError/Code/unknownCurrency``), never given a guessed currency.
struct MercadoPagoOrderCurrency {
    /// nil when nothing names the currency; only an amount then makes it an error.
    let code: String?
    private let countryCode: PayloadNode

    /// - Throws: ``PayloadError`` `.invalidField` for a `currency` or override that is not an
    ///   ISO 4217 code.
    init(order root: PayloadNode, override: String?) throws(PayloadError) {
        countryCode = root["country_code"]
        if let declared = try root["currency"].string() {
            code = declared.uppercased()
            guard (try? Money(minorUnits: 0, currency: declared)) != nil else { throw root["currency"].error(.invalidField) }
        } else if let override {
            code = override.uppercased()
            guard (try? Money(minorUnits: 0, currency: override)) != nil else { throw root["currency"].error(.unknownCurrency) }
        } else if let country = try countryCode.string() {
            code = MercadoPagoSite.named(country)?.currency
        } else {
            code = nil
        }
    }

    /// A decimal-string amount in this currency, exactly; nil when the field is absent.
    /// - Throws: ``PayloadError`` `.unknownCurrency` (on `country_code`) when no currency is
    ///   known, `.unrepresentableAmount` for more decimal places than the
    ///   currency's minor unit (`"1000.50"` CLP), `.invalidField` for anything not a decimal.
    func money(_ node: PayloadNode) throws(PayloadError) -> Money? {
        let text: String
        switch node.value {
        case nil, .null?: return nil
        case .string(let s)?: text = s
        case .number(let s)?: text = s
        default: throw node.error(.invalidField)
        }
        guard let code else { throw countryCode.error(.unknownCurrency) }
        do {
            return try Money.parse(decimal: text, currency: code)
        } catch .tooPrecise {
            throw node.error(.unrepresentableAmount)
        } catch {
            throw node.error(.invalidField)
        }
    }
}
