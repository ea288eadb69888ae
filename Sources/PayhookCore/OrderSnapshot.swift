public import Foundation

/// A provider order as fetched (Mercado Pago `GET /v1/orders/{id}`): the input for an
/// `orders` upsert and for each of its payments.
///
/// Fetched state is complete but can be stale when two fetches race, so the applier refuses a
/// snapshot whose ``updatedAt`` is older than the one stored.
public struct OrderSnapshot: Sendable, Hashable {
    public let provider: ProviderID
    public let account: String?
    /// The provider's order id (`ORD01…`). Unique with `provider`.
    public let providerOrderID: String
    /// The merchant's reference (`external_reference`).
    public let merchantReference: String?
    /// The order's total (`total_amount` + `currency`).
    public let amount: Money?
    /// The provider's order status word, as sent (`processed`, `action_required`).
    public let providerStatus: String
    /// The provider's status detail, as sent (`accredited`, `waiting_capture`).
    public let providerStatusDetail: String?
    /// The order status in canonical words, by the same table as its payments; `nil` when the
    /// provider used a word the table does not know (the raw word is still in
    /// ``providerStatus``).
    public let status: PaymentStatus?
    /// Every payment transaction of the order, each with its own status and refunds.
    public let payments: [PaymentSnapshot]
    /// The provider's last update time (MP `last_updated_date`).
    public let updatedAt: Date?

    public init(
        provider: ProviderID, account: String? = nil, providerOrderID: String, merchantReference: String? = nil,
        amount: Money? = nil, providerStatus: String, providerStatusDetail: String? = nil,
        status: PaymentStatus?, payments: [PaymentSnapshot], updatedAt: Date? = nil
    ) {
        self.provider = provider
        self.account = CardDataFilter.scrubbed(account)
        self.providerOrderID = providerOrderID
        self.merchantReference = CardDataFilter.scrubbed(merchantReference)
        self.amount = amount
        self.providerStatus = providerStatus
        self.providerStatusDetail = CardDataFilter.scrubbed(providerStatusDetail)
        self.status = status
        self.payments = payments
        self.updatedAt = updatedAt
    }
}
