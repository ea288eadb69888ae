/// Which kind of id a stored token is, for providers that have more than one
/// (`vault_tokens.token_kind`).
///
/// Mercado Pago names a saved card by its card id in payments and orders, but charges a
/// customer's saved card through a payment profile (`automatic_payments.payment_profile_id`), a
/// different resource; a card id sent where a profile id is expected is refused.
public enum VaultTokenKind: String, Sendable, Hashable, CaseIterable {
    /// Mercado Pago `payment_method.card_id` / `card.id`: learned from payments, not chargeable
    /// as a payment profile.
    case cardID = "card_id"
    /// Mercado Pago `automatic_payments.payment_profile_id`: what merchant-initiated charges send.
    case paymentProfile = "payment_profile"
}
