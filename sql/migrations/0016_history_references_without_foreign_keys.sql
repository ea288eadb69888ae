-- payment_events is history for people, written only by the processor, which inserts the ids of
-- the payment, order and token it has just read or written in the same transaction; payhook
-- never deletes payments, orders or tokens. The foreign keys added nothing to that guarantee but
-- cost every history row a check that locks the payment it names (FOR KEY SHARE): about three
-- quarters of the row's insert (docs/decisions/0008-history-references-without-foreign-keys.md).
-- The columns keep their ids, as inbound_event_id has since 0014. Dropping a constraint takes a
-- brief ACCESS EXCLUSIVE lock on each table involved and rewrites nothing.
ALTER TABLE payment_events DROP CONSTRAINT IF EXISTS payment_events_payment_id_fkey;
ALTER TABLE payment_events DROP CONSTRAINT IF EXISTS payment_events_order_id_fkey;
ALTER TABLE payment_events DROP CONSTRAINT IF EXISTS payment_events_vault_token_id_fkey;
