-- The scheduler claims due subscriptions ORDER BY next_charge_at, id. With the index on
-- next_charge_at alone, every subscription sharing one due time (an import, a monthly anchor)
-- had to be read and sorted on every batch: 197 ms per 500-row claim with 30,000 due at the
-- same instant (bench/charges, BENCH_PG_STATS=1). With id in the index the claim reads only
-- the rows it returns.
CREATE INDEX subscriptions_due_order ON subscriptions (next_charge_at, id) WHERE status = 'active';
DROP INDEX subscriptions_due;
