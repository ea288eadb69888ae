-- Merchant callbacks keep two identifiers. `fact_key` names the business fact
-- (`order.paid.<order id>`, `subscription.past_due:<id>:c<cycle>`, …) and is what makes a fact
-- reported once: a second callback for the same fact is not recorded. `webhook_id` is what the
-- merchant receives: the fact key and a random suffix, made when the row is written and sent on
-- every attempt and replay of it. Why: fact keys are built from id sequences, which a restored
-- backup or a staging clone rolls back, and Standard Webhooks asks for ids unique across all
-- messages; a merchant deduplicating by id would otherwise drop a new order's callback.
-- Callbacks recorded before keep their webhook_id as their fact key.
ALTER TABLE merchant_callbacks ADD COLUMN fact_key text;
UPDATE merchant_callbacks SET fact_key = webhook_id;
ALTER TABLE merchant_callbacks ALTER COLUMN fact_key SET NOT NULL;
ALTER TABLE merchant_callbacks ADD CONSTRAINT merchant_callbacks_fact_key_key UNIQUE (fact_key);
