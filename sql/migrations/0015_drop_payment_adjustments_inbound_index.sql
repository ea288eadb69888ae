-- payment_adjustments_inbound_event (0006) existed for the foreign-key check that deleting a
-- delivery ran against payment_adjustments; 0014 dropped that foreign key and no query reads
-- adjustments by delivery, so the index only cost each adjustment insert a write. Its sibling
-- payment_events_inbound stays: the console's search follows a delivery to its payments with it.
DROP INDEX IF EXISTS payment_adjustments_inbound_event;
