import PayhookCore

/// The currencies the operator configured for Mercado Pago accounts whose orders carry no
/// `currency`: `PAYHOOK_MERCADOPAGO_CURRENCY` for every account, and
/// `PAYHOOK_MERCADOPAGO_<ACCOUNT>_CURRENCY` for one. Unset means "the order's site decides"
/// (``MercadoPagoSite``).
public struct MercadoPagoCurrencyOverrides: Sendable, Hashable {
    /// The currency of every account without its own; nil for none.
    public var allAccounts: String?
    /// Per account, keyed by ``EnvironmentNames/accountKey(_:)`` (`acme-eu` -> `ACME_EU`).
    public var byAccount: [String: String]

    public init(allAccounts: String? = nil, byAccount: [String: String] = [:]) {
        self.allAccounts = allAccounts
        self.byAccount = byAccount
    }

    /// The configured currency of a route's account (`""` is the default route), or nil.
    public func currency(forAccount account: String) -> String? {
        if !account.isEmpty, let own = byAccount[EnvironmentNames.accountKey(account)] { return own }
        return allAccounts
    }
}
