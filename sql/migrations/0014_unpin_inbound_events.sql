-- Retention may now delete a processed delivery that canonical history came from. Until now the
-- foreign keys from payment_events and payment_adjustments held every such delivery forever, so
-- the inbox only grew. The columns stay, as references by id without a constraint: a row keeps
-- the id of the delivery it came from, which can be read while that delivery is retained
-- (docs/decisions/0006-retention-without-inbox-foreign-keys.md argues this against ON DELETE
-- SET NULL). Dropping a constraint takes a brief ACCESS EXCLUSIVE lock on each table and
-- rewrites nothing.
ALTER TABLE payment_events DROP CONSTRAINT payment_events_inbound_event_id_fkey;
ALTER TABLE payment_adjustments DROP CONSTRAINT payment_adjustments_inbound_event_id_fkey;

-- Retention keeps every delivery that has a dead letter, whatever the letter's status, and asks
-- for each window of deliveries it walks; the only index on dead_letters' source held open
-- letters, so each window read every letter (bench/README.md, bench/retention).
CREATE INDEX dead_letters_inbound_source ON dead_letters (source_id) WHERE source = 'inbound_event';
