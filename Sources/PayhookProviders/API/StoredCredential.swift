/// A card the shopper stored earlier, as a merchant-initiated charge names it.
///
/// Holds provider tokens, not card data. The token is not a secret in the sense of an API key
/// (it is useless without the merchant's credentials), but errors and logs still never quote it.
///
/// Which fields a provider needs:
///
/// | field                        | Mercado Pago                                 | Adyen                      | PXP                              |
/// |------------------------------|----------------------------------------------|----------------------------|----------------------------------|
/// | `token`                      | `automatic_payments.payment_profile_id`      | `storedPaymentMethodId`    | card-on-file token (`gatewayTokenId`) |
/// | `shopperReference`           | —                                            | `shopperReference` (required) | `shopper.id`                  |
/// | `customerID`                 | `payer.customer_id` (required)               | —                          | —                                |
/// | `previousTransactionReference` | `stored_credential.previous_transaction_reference` | —                 | recurring `previousTransactionReference` (UNCONFIRMED name) |
/// | `reason`                     | always `recurring`                           | always `Subscription`      | `.resubmission` → `MerchantInitiatedResubmission` |
/// | `sequence`                   | —                                            | —                          | — (always `…SubsequentRecurring`: `…InitialRecurring` is the card's setup, which payhook never makes) |
/// | `billing`                    | payment-level `subscription_data`            | —                          | —                                |
public struct StoredCredential: Sendable, Hashable {
    /// Why the merchant charges the stored card.
    public enum Reason: String, Sendable {
        /// A scheduled subscription charge.
        case recurring
        /// A retry of a charge that was declined softly (PXP `MerchantInitiatedResubmission`).
        case resubmission
    }

    /// Where a charge stands in the merchant-initiated series on this credential.
    public enum Sequence: String, Sendable {
        /// The first merchant-initiated charge of a series whose setup payhook recorded.
        case initial
        /// Every later one (and the first one on a credential set up elsewhere).
        case subsequent
    }

    /// The provider's token: Adyen `storedPaymentMethodId`, Mercado Pago `payment_profile_id`,
    /// PXP card-on-file token.
    public var token: String
    /// Adyen `shopperReference` (required by Adyen), or the PXP shopper id.
    public var shopperReference: String?
    /// Mercado Pago `payer.customer_id` (required by Mercado Pago).
    public var customerID: String?
    /// The scheme or provider reference of an earlier charge of this credential, where the
    /// provider accepts one.
    public var previousTransactionReference: String?
    /// A scheduled charge or the retry of a soft decline; only PXP sends the difference.
    public var reason: Reason
    /// First or later in the series; only PXP sends the difference (a resubmission wins).
    public var sequence: Sequence
    /// The cycle this charge pays; Mercado Pago sends it as `subscription_data`.
    public var billing: RecurringBilling?

    public init(
        token: String, shopperReference: String? = nil, customerID: String? = nil,
        previousTransactionReference: String? = nil, reason: Reason = .recurring, sequence: Sequence = .subsequent,
        billing: RecurringBilling? = nil
    ) {
        self.sequence = sequence
        self.billing = billing
        self.token = token
        self.shopperReference = shopperReference
        self.customerID = customerID
        self.previousTransactionReference = previousTransactionReference
        self.reason = reason
    }
}
