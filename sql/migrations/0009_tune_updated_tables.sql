-- Rows of charges and jobs are updated soon after they are inserted (attempted, settled;
-- claimed, completed). Free space on each page lets PostgreSQL update them in place (HOT) when
-- no indexed column changes, instead of writing a new entry into every index.
ALTER TABLE charges SET (fillfactor = 80);
ALTER TABLE jobs SET (fillfactor = 80);
ALTER TABLE merchant_callbacks SET (fillfactor = 80);

-- Retention deletes finished jobs by age; this keeps the sweep from scanning live work.
CREATE INDEX jobs_finished ON jobs (finalized_at) WHERE state IN ('succeeded', 'cancelled');
