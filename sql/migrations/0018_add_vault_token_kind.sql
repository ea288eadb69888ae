-- Which kind of id a vault token is, where a provider has more than one. Mercado Pago's webhooks
-- and payments name a saved card by its card id (payment_method.card_id, card.id), while its
-- merchant-initiated charges take a payment profile (automatic_payments.payment_profile_id), a
-- different resource that holds card ids: a card id sent as a profile is refused.
--   token_kind          'card_id' or 'payment_profile'; NULL where the provider has one kind.
--   payment_profile_id  the profile an order showed this card id charged through, once seen.
-- Every Mercado Pago token stored before this migration came from a card id.
-- Adding nullable columns without defaults rewrites nothing; the backfill touches only
-- Mercado Pago rows.
ALTER TABLE vault_tokens ADD COLUMN token_kind text CHECK (token_kind IN ('card_id', 'payment_profile'));
ALTER TABLE vault_tokens ADD COLUMN payment_profile_id text;
UPDATE vault_tokens SET token_kind = 'card_id' WHERE provider = 'mercadopago';
