-- Recurring charges: what the scheduler, the charge_recurring job and dunning need beyond 0002.

-- An optional end date next to max_cycles; the subscription completes after the last cycle due
-- at or before it.
ALTER TABLE subscriptions
    ADD COLUMN end_at      timestamptz,
    ADD COLUMN canceled_at timestamptz,
    ADD CONSTRAINT subscriptions_end_after_start CHECK (end_at IS NULL OR end_at >= start_at);
-- Token lifecycle events pause the subscriptions of one token.
CREATE INDEX subscriptions_vault_token ON subscriptions (vault_token_id);

-- One attempt's bookkeeping:
--   reason          recurring (first attempt of a cycle) or resubmission (dunning retry); part of
--                   what is sent, so every retry of the same key sends the same request
--   scheduled_at    when the attempt is due (dunning spaces attempts out)
--   attempted_at    set, and committed, before the first provider call: a charge with it set may
--                   have executed at the provider and is only ever retried with its own key
--   previous_transaction_reference  frozen at the first call, for the same reason as `reason`
--   provider        the token's provider when the charge was created
--   payment_id      the payments row the provider's payment id resolves to (Adyen, PXP)
--   order_id        the orders row (Mercado Pago charges are orders)
--   calls           provider calls made for this key (charges, lookups)
--   skipped         never sent: the subscription was paused, canceled or past due (or its token
--                   unusable) before the attempt ran
ALTER TABLE charges
    ADD COLUMN reason          text        NOT NULL DEFAULT 'recurring' CHECK (reason IN ('recurring', 'resubmission')),
    ADD COLUMN provider        text,
    ADD COLUMN scheduled_at    timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN attempted_at    timestamptz,
    ADD COLUMN previous_transaction_reference text,
    ADD COLUMN provider_status text,
    ADD COLUMN payment_id      bigint REFERENCES payments (id),
    ADD COLUMN order_id        bigint REFERENCES orders (id),
    ADD COLUMN calls           integer     NOT NULL DEFAULT 0,
    ADD COLUMN last_error      text,
    ADD COLUMN settled_at      timestamptz,
    DROP CONSTRAINT charges_status_check,
    ADD CONSTRAINT charges_status_check
        CHECK (status IN ('pending', 'succeeded', 'declined_soft', 'declined_hard', 'unknown', 'skipped'));
CREATE INDEX charges_payment ON charges (payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX charges_provider_payment ON charges (provider, provider_payment_id) WHERE provider_payment_id IS NOT NULL;
