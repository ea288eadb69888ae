public import Foundation

/// A stored payment method as the provider describes it: what `vault_tokens` holds.
///
/// Only the provider's token and display data exist here: brand, last four digits, expiry.
/// The initializer enforces that (invariant 6) rather than trusting every decoder: `last4`
/// must be exactly four digits, `expiry` must be `MM/YYYY`, and free-text fields that contain
/// a card number are dropped (see ``CardDataFilter``). There is no field for a full card
/// number or a security code, and there must never be one.
public struct VaultTokenSnapshot: Sendable, Hashable {
    public let provider: ProviderID
    /// The provider's merchant account the token belongs to, when the payload says.
    public let account: String?
    /// The provider's token: Adyen `storedPaymentMethodId`, Mercado Pago card id, PXP
    /// gateway token id. Unique with `provider`.
    public let token: String
    /// The merchant's reference for the shopper (Adyen `shopperReference`).
    public let shopperReference: String?
    /// The provider's customer id (Mercado Pago `customer_id`).
    public let customerID: String?
    /// Card brand or payment method as the provider names it (`mc`, `visa`, `master`).
    public let brand: String?
    /// Exactly four digits, or `nil`.
    public let last4: String?
    /// `MM/YYYY`, or `nil`.
    public let expiry: String?
    public let status: VaultTokenStatus
    /// When the provider says the change happened.
    public let occurredAt: Date?
    /// The provider's id of a successful payment made with this credential, where later
    /// merchant-initiated charges must reference the first one (Mercado Pago
    /// `previous_transaction_reference`). Stored once, by the first event that carries one.
    public let firstPaymentReference: String?
    /// Which kind of id ``token`` is, where the provider has several (Mercado Pago card id or
    /// payment profile); nil where it has one.
    public let kind: VaultTokenKind?
    /// The payment profile a Mercado Pago order showed this card charged through
    /// (`automatic_payments.payment_profile_id`): what a merchant-initiated charge sends.
    public let paymentProfileID: String?

    public init(
        provider: ProviderID, account: String? = nil, token: String, shopperReference: String? = nil,
        customerID: String? = nil, brand: String? = nil, last4: String? = nil, expiry: String? = nil,
        status: VaultTokenStatus, occurredAt: Date? = nil, firstPaymentReference: String? = nil,
        kind: VaultTokenKind? = nil, paymentProfileID: String? = nil
    ) {
        self.firstPaymentReference = CardDataFilter.scrubbed(firstPaymentReference)
        self.kind = kind
        self.paymentProfileID = CardDataFilter.scrubbed(paymentProfileID)
        self.provider = provider
        self.account = CardDataFilter.scrubbed(account)
        self.token = token
        self.shopperReference = CardDataFilter.scrubbed(shopperReference)
        self.customerID = CardDataFilter.scrubbed(customerID)
        self.brand = CardDataFilter.scrubbed(brand)
        self.last4 = last4.flatMap { $0.utf8.count == 4 && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } ? $0 : nil }
        self.expiry = expiry.flatMap(Self.normalizedExpiry)
        self.status = status
        self.occurredAt = occurredAt
    }

    /// `MM/YYYY` from `M/YYYY`, `MM/YY`, `MM/YYYY`; `nil` for anything else.
    public static func normalizedExpiry(_ text: String) -> String? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        return normalizedExpiry(month: String(parts[0]), year: String(parts[1]))
    }

    /// `MM/YYYY` from separate month and year fields (`"3"`, `"2030"` → `"03/2030"`;
    /// two-digit years are taken as 20YY); `nil` when either is not a valid number.
    public static func normalizedExpiry(month: String, year: String) -> String? {
        let digitsOnly: (String) -> Bool = { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard digitsOnly(month), digitsOnly(year), month.count <= 2,
              let monthValue = Int(month), (1...12).contains(monthValue),
              year.count == 2 || year.count == 4, var yearValue = Int(year)
        else { return nil }
        if year.count == 2 { yearValue += 2000 }
        return (monthValue < 10 ? "0" : "") + String(monthValue) + "/" + String(yearValue)
    }
}

/// The closed set stored in `vault_tokens.status`.
public enum VaultTokenStatus: String, Sendable, CaseIterable, Codable {
    case active, disabled, expired
}

/// What happened to a vault token; the suffix of the `token.*` event type.
public enum VaultTokenChange: String, Sendable, CaseIterable, Codable {
    /// A new token was stored (Adyen `recurring.token.created`, `RECURRING_CONTRACT`).
    case created
    /// The token exists and its details were (re)stated (Adyen `recurring.token.updated`,
    /// `recurring.token.alreadyExisting`, PXP token notifications).
    case updated
    /// The token can no longer be charged.
    case disabled
    /// The card behind the token expired.
    case expired
}
