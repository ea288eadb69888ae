public import Foundation

/// One provider payment as one event describes it: the input for a `payments` upsert and a
/// `payment_events` row.
///
/// A snapshot is not the truth about the payment, only what this event says; the applier
/// merges it with what is stored through ``PaymentStatus/resolve(current:applying:refundedMinorUnits:amountMinorUnits:)``
/// (status), ``RefundChange`` (refunds) and `occurredAt` (older fetched state is refused).
/// Free-text fields are passed through ``CardDataFilter`` on construction.
public struct PaymentSnapshot: Sendable, Hashable {
    public let provider: ProviderID
    /// The provider's merchant account named in the payload (Adyen `merchantAccountCode`,
    /// PXP `merchant`); `nil` when the payload does not say.
    public let account: String?
    /// The provider's payment id: Adyen pspReference of the payment (for modifications, the
    /// item's `originalReference`), Mercado Pago payment / transaction id, PXP
    /// `systemTransactionId`. Unique with `provider`.
    public let providerPaymentID: String
    /// The provider's order id when the payment belongs to one (Mercado Pago orders).
    public let providerOrderID: String?
    /// The merchant's own reference (Adyen `merchantReference`, MP `external_reference`,
    /// PXP `merchantTransactionId`).
    public let merchantReference: String?
    /// The payment's amount, when this event states it. Adyen states it only on
    /// AUTHORISATION; a modification's amount is in ``modificationAmount``.
    public let amount: Money?
    /// The amount a modification concerns (captured, refunded, cancelled, disputed), when it
    /// differs in meaning from the payment's amount.
    public let modificationAmount: Money?
    /// What this event does to the stored status.
    public let transition: StatusTransition
    /// The provider's detail for the status (MP `status_detail`, Adyen refusal `reason`,
    /// PXP `stateData.code`).
    public let statusDetail: String?
    /// The provider's own status word (`AUTHORISATION`, `approved`, `Captured`): kept for
    /// history and operators, never used for decisions.
    public let providerStatus: String?
    /// Payment method as the provider names it (`mc`, `visa`, `master`, `pix`).
    public let method: String?
    /// How it was funded, lower case: `credit`, `debit`, `prepaid`, `card`, or the
    /// provider's own word for non-card methods.
    public let funding: String?
    /// When the provider says the event happened or the state was last updated.
    public let occurredAt: Date?
    public let refund: RefundChange?
    /// A capture this event reports or cancels (Adyen `CAPTURE`, `CAPTURE_FAILED`).
    public let capture: CaptureChange?
    /// `amount` is a new authorised amount that replaces the stored one (Adyen
    /// `AUTHORISATION_ADJUSTMENT`), rather than a first statement of it.
    public let replacesAmount: Bool
    /// A stored payment method created or used by this payment.
    public let vaultToken: VaultTokenSnapshot?
    /// The provider's own identity of this event, made only of fields the provider signs
    /// (Adyen: the eight HMAC-signed fields of the item), so an adjustment it counts (a
    /// chargeback, a failed capture) is counted once however the provider batches or repeats
    /// it, and no unsigned field can turn one event into two; nil when the provider gives none.
    public let eventReference: String?

    public init(
        provider: ProviderID, account: String? = nil, providerPaymentID: String, providerOrderID: String? = nil,
        merchantReference: String? = nil, amount: Money? = nil, modificationAmount: Money? = nil,
        transition: StatusTransition, statusDetail: String? = nil, providerStatus: String? = nil,
        method: String? = nil, funding: String? = nil, occurredAt: Date? = nil,
        refund: RefundChange? = nil, vaultToken: VaultTokenSnapshot? = nil, eventReference: String? = nil,
        capture: CaptureChange? = nil, replacesAmount: Bool = false
    ) {
        self.provider = provider
        self.account = CardDataFilter.scrubbed(account)
        self.providerPaymentID = providerPaymentID
        self.providerOrderID = providerOrderID
        self.merchantReference = CardDataFilter.scrubbed(merchantReference)
        self.amount = amount
        self.modificationAmount = modificationAmount
        self.transition = transition
        self.statusDetail = CardDataFilter.scrubbed(statusDetail)
        self.providerStatus = CardDataFilter.scrubbed(providerStatus)
        self.method = CardDataFilter.scrubbed(method)
        self.funding = CardDataFilter.scrubbed(funding)
        self.occurredAt = occurredAt
        self.refund = refund
        self.vaultToken = vaultToken
        self.eventReference = eventReference
        self.capture = capture
        self.replacesAmount = replacesAmount
    }

    /// The status this event reports, `nil` for explicit transitions (see ``StatusTransition``).
    public var status: PaymentStatus? { transition.reportedStatus }
}
