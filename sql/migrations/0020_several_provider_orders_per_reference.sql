-- A merchant order has one reference and any number of provider orders: Mercado Pago opens a new
-- order for every checkout attempt (a failed attempt before the paid one, dunning retries of a
-- cycle), each carrying the same external_reference.
--   merchant_order_id  the registered order (same provider, account and reference) a provider
--                      order belongs to; NULL on the registered order itself and on provider
--                      orders no merchant registered. Fulfillment counts the payments of the
--                      registered order and of every provider order linked to it.
-- The reference stays unique among registered orders only: provider orders that share it are
-- stored with it instead of being stripped of it or dead-lettered.
ALTER TABLE orders ADD COLUMN merchant_order_id bigint REFERENCES orders (id);
CREATE INDEX orders_merchant_order ON orders (merchant_order_id) WHERE merchant_order_id IS NOT NULL;

DROP INDEX orders_merchant_reference;
CREATE UNIQUE INDEX orders_merchant_reference ON orders (provider, account, merchant_reference)
    WHERE merchant_reference IS NOT NULL AND registered_at IS NOT NULL;
-- Provider orders are still found by reference (linking, the console's search).
CREATE INDEX orders_provider_reference ON orders (provider, account, merchant_reference)
    WHERE merchant_reference IS NOT NULL AND registered_at IS NULL;

-- What a registered order's fulfillment is waiting for, and since when: the check found a fact
-- missing (a capture without its amount, a payment still pending). Set by the first check that
-- waits, cleared when the order is fulfilled or goes to review, so every re-check (a replay of
-- its dead letter, a new fact on the order) waits PAYHOOK_FULFILLMENT_REVIEW_AFTER_SECONDS
-- afresh. The console shows both.
ALTER TABLE orders ADD COLUMN waiting_for text, ADD COLUMN waiting_since timestamptz;
