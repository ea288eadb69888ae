-- Merchant references are unique per account, not per provider: with per-account routes
-- (/webhooks/adyen/shop-a, /webhooks/adyen/shop-b) two shops may both have an order `1001`, and
-- a payment links to (and fulfills) only the order of the account whose route delivered it.
DROP INDEX orders_merchant_reference;
CREATE UNIQUE INDEX orders_merchant_reference ON orders (provider, account, merchant_reference)
    WHERE merchant_reference IS NOT NULL;

-- payments.account (and that of orders a webhook created) was the payload's merchant account
-- (Adyen merchantAccountCode); it is now the payhook account whose route delivered the row,
-- taken from the first delivery that wrote it. Rows already stored get the same. This rewrites
-- every payment in one transaction (payments being processed wait for it): on a large table,
-- migrate in a quiet hour.
UPDATE payments p
SET account = coalesce((SELECT e.account FROM payment_events pe JOIN inbound_events e ON e.id = pe.inbound_event_id
                        WHERE pe.payment_id = p.id ORDER BY pe.id LIMIT 1), '');
UPDATE orders o
SET account = coalesce((SELECT e.account FROM payment_events pe JOIN inbound_events e ON e.id = pe.inbound_event_id
                        WHERE pe.order_id = o.id ORDER BY pe.id LIMIT 1), '')
WHERE o.registered_at IS NULL;
