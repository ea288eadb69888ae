-- What the merchant registered through the admin API (POST /v1/orders), kept apart from the
-- provider-reported amount_minor/currency so that provider data can never overwrite the
-- expectation fulfillment is checked against.
ALTER TABLE orders
    ADD COLUMN expected_amount_minor bigint CHECK (expected_amount_minor > 0),
    ADD COLUMN expected_currency     char(3),
    ADD COLUMN registered_at         timestamptz,
    ADD COLUMN fulfilled_at          timestamptz,
    ADD CONSTRAINT orders_expectation_complete
        CHECK ((expected_amount_minor IS NULL) = (expected_currency IS NULL));

-- Signed callbacks to the merchant (Standard Webhooks). One row per event, keyed by its
-- webhook-id, which stays the same on every delivery attempt; the body is frozen at creation so
-- retries send identical bytes.
CREATE TABLE merchant_callbacks (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id       text        NOT NULL UNIQUE,
    type             text        NOT NULL,
    order_id         bigint REFERENCES orders (id),
    subscription_id  bigint REFERENCES subscriptions (id),
    url              text,
    body             text        NOT NULL,
    status           text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'gone', 'failed')),
    attempts         integer     NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz
);
CREATE INDEX merchant_callbacks_order ON merchant_callbacks (order_id) WHERE order_id IS NOT NULL;
CREATE INDEX merchant_callbacks_subscription ON merchant_callbacks (subscription_id) WHERE subscription_id IS NOT NULL;
