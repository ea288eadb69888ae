-- Retention deletes old processed inbound_events; each deleted row makes PostgreSQL check the
-- foreign key from payment_adjustments.inbound_event_id, which without an index is a scan of
-- the whole table per deleted row. (payment_events already has payment_events_inbound.)
CREATE INDEX payment_adjustments_inbound_event ON payment_adjustments (inbound_event_id)
    WHERE inbound_event_id IS NOT NULL;
