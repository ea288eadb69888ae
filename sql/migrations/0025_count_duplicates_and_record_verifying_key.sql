-- Duplicate deliveries per five-minute period, by provider and account: ingress acknowledges a
-- duplicate (the inbound_events insert conflicts on its dedup key) and stores nothing, so without
-- this no table says how many arrived. Ingress is the only writer: the same statement that inserts
-- a batch skipping stored deliveries adds the batch's duplicates here, so the count commits with
-- the answer; a batch with no duplicate (the COPY path) writes nothing. Five minutes, not an hour,
-- so the console's 1-hour window (5-minute bars) can draw them too. The console's rollup ticker
-- deletes periods older than two weeks, with its hourly rollup. docs/decisions/0017.
CREATE TABLE inbound_duplicate_periods (
    period_start timestamptz NOT NULL,
    provider     text        NOT NULL,
    account      text        NOT NULL,
    duplicates   bigint      NOT NULL,
    PRIMARY KEY (period_start, provider, account)
);

-- Which key of the provider's key ring verified each delivery: 0 the current key, 1 and up the
-- previous ones still accepted during a rotation (VerifiedDelivery.keyIndex). Written by ingress
-- in the same COPY or INSERT as the delivery; NULL for deliveries stored before this column.
-- The console's provider page reads it to say when a previous key was last used, so an operator
-- knows when the old secret can go. Nullable with no default: adding it rewrites no row.
ALTER TABLE inbound_events ADD COLUMN key_index smallint;
