public import PayhookCore

/// What a merchant-initiated charge came to, in the words a retry policy needs.
///
/// Each provider has one classification table (``MercadoPagoChargeClassification``,
/// ``AdyenChargeClassification``, ``PXPChargeClassification``) from its own vocabulary to
/// these four values.
public enum ChargeOutcome: String, Sendable, Hashable, CaseIterable {
    /// The money was taken (or authorised for capture).
    case succeeded
    /// Accepted but not final: wait for the webhook or look the charge up later. Never charge
    /// again with a new idempotency key while a charge is pending.
    case pending
    /// Declined for a reason that may pass later (insufficient funds, issuer unavailable,
    /// technical error). A later attempt is a new charge: a new idempotency key (the provider
    /// stored this answer under the old one) and, for PXP, ``StoredCredential/Reason/resubmission``.
    case declinedSoft = "declined_soft"
    /// Declined for good (card blocked, expired, revoked, fraud, "do not try again", or
    /// anything that would need the shopper): stop charging this credential.
    case declinedHard = "declined_hard"
}

/// The answer to one charge.
public struct ChargeResult: Sendable, Hashable {
    /// What the caller should do next, from the provider's classification table.
    public var outcome: ChargeOutcome
    /// Mercado Pago order id, Adyen `pspReference`, PXP `systemTransactionId`; `nil` only if
    /// the provider's answer carried none.
    public var providerPaymentID: String?
    /// The provider's own status word (`processed`, `Refused`, `Authorised`, …), for logs and
    /// for an operator; decisions use ``outcome``.
    public var providerStatus: String
    /// Why it was declined, in the provider's codes: Mercado Pago `status_detail`, Adyen
    /// `refusalReasonCode` (with `;mac=NN` appended when a `merchantAdviceCode` came back),
    /// PXP `stateData.code`. `nil` when there is none.
    public var declineCode: String?

    public init(outcome: ChargeOutcome, providerPaymentID: String? = nil, providerStatus: String, declineCode: String? = nil) {
        self.outcome = outcome
        self.providerPaymentID = providerPaymentID
        self.providerStatus = providerStatus
        self.declineCode = declineCode
    }
}

extension ChargeResult {
    /// The canonical status of the payment (Mercado Pago: the order) a successful charge made,
    /// from `providerStatus` in the words of `provider`: each provider's charge table decides
    /// (``AdyenChargeClassification/paymentStatus(ofSuccess:)``,
    /// ``MercadoPagoChargeClassification/paymentStatus(ofSuccess:)``,
    /// ``PXPChargeClassification/paymentStatus(ofSuccess:)``). Words that are not the provider's
    /// (an operator's `operator:succeeded`, a stored `webhook:…` status) and providers payhook
    /// does not know read as authorised; the webhook's status replaces it.
    public static func paymentStatus(ofSuccess providerStatus: String, provider: String) -> PaymentStatus {
        switch ProviderID(rawValue: provider) {
        case .adyen?: AdyenChargeClassification.paymentStatus(ofSuccess: providerStatus)
        case .mercadopago?: MercadoPagoChargeClassification.paymentStatus(ofSuccess: providerStatus)
        case .pxp?: PXPChargeClassification.paymentStatus(ofSuccess: providerStatus)
        case nil: .authorized
        }
    }
}
