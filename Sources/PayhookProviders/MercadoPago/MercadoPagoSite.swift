/// The Mercado Pago sites (countries) an account can sell in, and the currency each one
/// settles in: the currency of an order that names none.
///
/// Orders (`GET /v1/orders/{id}`) carry `country_code` and decimal-string amounts, but the
/// published answers carry no `currency` (docs/providers.md, "Orders without currency"). The
/// country is written as ISO 3166 alpha-3 in Mercado Pago's guides (`"ARG"`), alpha-2 in other
/// pages (`"AR"`), and a site is also known by its site id (`MLA`); all three name one row.
///
/// | site | alpha-2 | alpha-3 | currency |
/// |------|---------|---------|----------|
/// | MLA  | AR      | ARG     | ARS      |
/// | MLB  | BR      | BRA     | BRL      |
/// | MLM  | MX      | MEX     | MXN      |
/// | MLC  | CL      | CHL     | CLP      |
/// | MCO  | CO      | COL     | COP      |
/// | MPE  | PE      | PER     | PEN      |
/// | MLU  | UY      | URY     | UYU      |
///
/// Sources: the site ids and countries are the ones Mercado Pago's official SDK guides list
/// for credentials (mercadopago/devsite-docs `plugins_sdks/sdks/official/nodejs.pt.md`); each
/// site's currency is its country's ISO 4217 currency, not yet checked against a Mercado Pago
/// `GET /sites` answer (UNCONFIRMED in docs/providers.md).
/// A site missing from this table is not guessed: the order is refused until
/// `PAYHOOK_MERCADOPAGO_CURRENCY` (or the account's own variable) names the currency.
public struct MercadoPagoSite: Sendable, Hashable {
    public let siteID: String
    public let alpha2: String
    public let alpha3: String
    public let currency: String

    /// Every site payhook knows, in the table's order.
    public static let all: [MercadoPagoSite] = [
        MercadoPagoSite(siteID: "MLA", alpha2: "AR", alpha3: "ARG", currency: "ARS"),
        MercadoPagoSite(siteID: "MLB", alpha2: "BR", alpha3: "BRA", currency: "BRL"),
        MercadoPagoSite(siteID: "MLM", alpha2: "MX", alpha3: "MEX", currency: "MXN"),
        MercadoPagoSite(siteID: "MLC", alpha2: "CL", alpha3: "CHL", currency: "CLP"),
        MercadoPagoSite(siteID: "MCO", alpha2: "CO", alpha3: "COL", currency: "COP"),
        MercadoPagoSite(siteID: "MPE", alpha2: "PE", alpha3: "PER", currency: "PEN"),
        MercadoPagoSite(siteID: "MLU", alpha2: "UY", alpha3: "URY", currency: "UYU"),
    ]

    /// The site a `country_code` (alpha-2, alpha-3, or site id; any case) names, or nil.
    public static func named(_ code: String) -> MercadoPagoSite? {
        let upper = code.uppercased()
        return all.first { $0.alpha2 == upper || $0.alpha3 == upper || $0.siteID == upper }
    }
}
