-- The canonical payment model. Money is integer minor units plus an ISO 4217 code.
CREATE TABLE orders (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider            text        NOT NULL,
    account             text        NOT NULL DEFAULT '',
    provider_order_id   text,
    merchant_reference  text,
    amount_minor        bigint,
    currency            char(3),
    status              text        NOT NULL DEFAULT 'created',
    fulfillment_status  text        NOT NULL DEFAULT 'none'
        CHECK (fulfillment_status IN ('none', 'pending', 'fulfilled', 'needs_review', 'failed')),
    review_reason       text,
    callback_url        text,
    provider_updated_at timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (provider_order_id IS NOT NULL OR merchant_reference IS NOT NULL)
);
CREATE UNIQUE INDEX orders_provider_order ON orders (provider, provider_order_id) WHERE provider_order_id IS NOT NULL;
CREATE UNIQUE INDEX orders_merchant_reference ON orders (provider, merchant_reference) WHERE merchant_reference IS NOT NULL;

CREATE TABLE payments (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider            text        NOT NULL,
    account             text        NOT NULL DEFAULT '',
    provider_payment_id text        NOT NULL,
    order_id            bigint REFERENCES orders (id),
    merchant_reference  text,
    amount_minor        bigint,
    currency            char(3),
    refunded_minor      bigint      NOT NULL DEFAULT 0,
    status              text        NOT NULL CHECK (status IN ('pending', 'authorized', 'captured',
        'partially_refunded', 'refunded', 'canceled', 'declined', 'failed', 'expired', 'charged_back')),
    status_detail       text,
    method              text,
    funding             text,
    provider_updated_at timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT payments_provider_payment UNIQUE (provider, provider_payment_id)
);
CREATE INDEX payments_order ON payments (order_id);

-- Append-only history; the current state lives in orders and payments.
CREATE TABLE payment_events (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payment_id       bigint REFERENCES payments (id),
    order_id         bigint REFERENCES orders (id),
    inbound_event_id bigint REFERENCES inbound_events (id),
    type             text        NOT NULL,
    occurred_at      timestamptz NOT NULL,
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    data             jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX payment_events_payment ON payment_events (payment_id);
CREATE INDEX payment_events_order ON payment_events (order_id);
CREATE INDEX payment_events_inbound ON payment_events (inbound_event_id);

-- Stored payment methods: provider tokens and display data only, never card numbers or codes.
CREATE TABLE vault_tokens (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider          text        NOT NULL,
    account           text        NOT NULL DEFAULT '',
    token             text        NOT NULL,
    shopper_reference text,
    customer_id       text,
    brand             text,
    last4             char(4) CHECK (last4 ~ '^[0-9]{4}$'),
    expiry            text CHECK (expiry ~ '^[0-9]{2}/[0-9]{4}$'),
    status            text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'expired')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT vault_tokens_provider_token UNIQUE (provider, token)
);

CREATE TABLE subscriptions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    vault_token_id bigint      NOT NULL REFERENCES vault_tokens (id),
    reference      text        NOT NULL UNIQUE,
    amount_minor   bigint      NOT NULL CHECK (amount_minor > 0),
    currency       char(3)     NOT NULL,
    interval       jsonb       NOT NULL,
    start_at       timestamptz NOT NULL,
    next_charge_at timestamptz NOT NULL,
    cycle          integer     NOT NULL DEFAULT 1,
    max_cycles     integer CHECK (max_cycles IS NULL OR max_cycles > 0),
    status         text        NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'past_due', 'paused', 'canceled', 'completed')),
    status_reason  text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_due ON subscriptions (next_charge_at) WHERE status = 'active';

-- One row per attempt; the idempotency key is stored before the provider is called.
CREATE TABLE charges (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id     bigint      NOT NULL REFERENCES subscriptions (id),
    cycle               integer     NOT NULL,
    attempt             integer     NOT NULL,
    idempotency_key     text        NOT NULL UNIQUE,
    amount_minor        bigint      NOT NULL,
    currency            char(3)     NOT NULL,
    status              text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'succeeded', 'declined_soft', 'declined_hard', 'unknown')),
    decline_code        text,
    provider_payment_id text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (subscription_id, cycle, attempt)
);
-- The heart of "exactly one successful charge per cycle".
CREATE UNIQUE INDEX charges_one_success_per_cycle ON charges (subscription_id, cycle) WHERE status = 'succeeded';
