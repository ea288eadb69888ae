-- Refunds, chargebacks and their reversals that arrive as increments (Adyen), one row per
-- provider reference, so that a duplicate or replayed notification changes nothing and the
-- sums do not depend on delivery order. Fetched-state providers (Mercado Pago, PXP) report
-- totals instead and never write here.
CREATE TABLE payment_adjustments (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider         text        NOT NULL,
    -- refund: money returned; chargeback / chargeback_reversal: a dispute and its reversal;
    -- capture_failure: the scheme rejected a capture that had been reported done.
    kind             text        NOT NULL CHECK (kind IN ('refund', 'chargeback', 'chargeback_reversal', 'capture_failure')),
    reference        text        NOT NULL,
    payment_id       bigint      NOT NULL REFERENCES payments (id),
    amount_minor     bigint,
    currency         char(3),
    -- A refund reported failed (REFUND_FAILED) stays as a tombstone: a late REFUND for the same
    -- reference must not count it again.
    failed           boolean     NOT NULL DEFAULT false,
    inbound_event_id bigint      REFERENCES inbound_events (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT payment_adjustments_reference UNIQUE (provider, kind, reference)
);
CREATE INDEX payment_adjustments_payment ON payment_adjustments (payment_id);

-- Dispute and capture-failure counts, kept beside refunded_minor so that deciding a payment's
-- status needs no extra query on the common path.
ALTER TABLE payments
    ADD COLUMN chargebacks          integer NOT NULL DEFAULT 0,
    ADD COLUMN chargeback_reversals integer NOT NULL DEFAULT 0,
    ADD COLUMN capture_failures     integer NOT NULL DEFAULT 0;

-- Token history belongs in payment_events too; token events have no payment.
ALTER TABLE payment_events ADD COLUMN vault_token_id bigint REFERENCES vault_tokens (id);
CREATE INDEX payment_events_vault_token ON payment_events (vault_token_id) WHERE vault_token_id IS NOT NULL;

-- Fetched token state can arrive out of order like payments.
ALTER TABLE vault_tokens ADD COLUMN provider_updated_at timestamptz;
