-- The provider sweep (docs/architecture.md, "What providers never send"): what it has asked a
-- provider, or raised for a person, about orders, payments and charges nobody told payhook
-- about. One row per subject; the sweep is its only writer.
--   checks                     lookups queued (or raises) so far
--   last_checked_at            when the sweep last looked at the subject
--   waiting_on_provider_since  set when the provider has no lookup (Adyen payments): the
--                              subject waits for a person, who sees it in the console
CREATE TABLE sweep_checks (
    subject                   text        NOT NULL CHECK (subject IN ('order', 'payment', 'charge')),
    subject_id                bigint      NOT NULL,
    provider                  text        NOT NULL,
    reason                    text        NOT NULL,
    checks                    integer     NOT NULL DEFAULT 0,
    last_checked_at           timestamptz NOT NULL,
    waiting_on_provider_since timestamptz,
    PRIMARY KEY (subject, subject_id)
);
CREATE INDEX sweep_checks_waiting ON sweep_checks (waiting_on_provider_since)
    WHERE waiting_on_provider_since IS NOT NULL;

-- A registered order still unpaid past PAYHOOK_SWEEP_ORDER_DEADLINE. A payment arriving later
-- still fulfills it; this only records that the merchant was (or could have been) told.
ALTER TABLE orders ADD COLUMN expired_at timestamptz;

-- The sweep looks for payments that stopped moving; the index holds only the few open ones.
CREATE INDEX payments_unsettled ON payments (updated_at) WHERE status IN ('pending', 'authorized');
CREATE INDEX orders_unpaid_registered ON orders (registered_at)
    WHERE registered_at IS NOT NULL AND expired_at IS NULL AND fulfillment_status = 'none';
