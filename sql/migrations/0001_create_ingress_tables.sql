-- The durable inbox: every verified delivery, raw and immutable, before any processing.
CREATE TABLE inbound_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider        text        NOT NULL CHECK (provider IN ('mercadopago', 'adyen', 'pxp')),
    account         text        NOT NULL DEFAULT '',
    dedup_key       text        NOT NULL,
    event_type      text,
    received_at     timestamptz NOT NULL DEFAULT now(),
    remote_addr     text,
    headers         jsonb       NOT NULL DEFAULT '{}',
    query           text        NOT NULL DEFAULT '',
    body            bytea       NOT NULL,
    -- pending -> processed | dead; processing may only move it forward.
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    processed_at    timestamptz,
    CONSTRAINT inbound_events_dedup UNIQUE (provider, dedup_key)
);

-- Processors claim the oldest due pending rows; the partial index stays small because
-- processed rows leave it.
CREATE INDEX inbound_events_due ON inbound_events (next_attempt_at, id) WHERE status = 'pending';
-- Retention scans by age; rows arrive in time order, so a BRIN index serves that at almost no
-- cost on the insert path (a btree here cost the ingest path a measurable share).
CREATE INDEX inbound_events_received ON inbound_events USING brin (received_at);

-- Deliveries that failed verification, for forensics. Bodies are truncated by the writer and
-- the table is pruned by retention, so an attacker cannot grow it without bound.
CREATE TABLE rejected_deliveries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider    text        NOT NULL,
    account     text        NOT NULL DEFAULT '',
    reason      text        NOT NULL,
    remote_addr text,
    received_at timestamptz NOT NULL DEFAULT now(),
    headers     jsonb       NOT NULL DEFAULT '{}',
    body_size   integer     NOT NULL,
    body        bytea       NOT NULL
);
CREATE INDEX rejected_deliveries_received ON rejected_deliveries USING brin (received_at);

-- Wakes processors once per inserting statement (a whole group-committed batch), not per row.
CREATE FUNCTION notify_inbound_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('payhook_inbound_events', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER inbound_events_notify AFTER INSERT ON inbound_events
    FOR EACH STATEMENT EXECUTE FUNCTION notify_inbound_events();
