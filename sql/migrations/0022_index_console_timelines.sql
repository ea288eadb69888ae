-- The console's charts (ConsoleChartSQL) count events per interval by the time they happened.
-- Deliveries, refusals and lag already have BRIN indexes on received_at and dead letters a btree
-- on created_at; these cover the other instants the charts read, and the "waiting on" lists.
-- The partial ones hold only rows still waiting, so they stay small as history grows.
CREATE INDEX dead_letters_resolved ON dead_letters (resolved_at) WHERE resolved_at IS NOT NULL;
-- With the columns the chart groups by, so counting a week of fulfillments reads no order rows.
CREATE INDEX orders_fulfilled ON orders (fulfilled_at) INCLUDE (provider, account) WHERE fulfilled_at IS NOT NULL;
CREATE INDEX charges_created ON charges (created_at);
-- Waiting on a human: orders in review, charges whose outcome only `charges resolve` can settle.
CREATE INDEX orders_in_review ON orders (updated_at) WHERE fulfillment_status = 'needs_review';
CREATE INDEX charges_unknown ON charges (created_at) WHERE status = 'unknown';
-- Waiting on the merchant: callbacks not yet delivered, grouped by endpoint.
CREATE INDEX merchant_callbacks_undelivered ON merchant_callbacks (url) WHERE status IN ('pending', 'failed');
-- Waiting on the provider: orders whose fulfillment waits for a fact (orders.waiting_for).
CREATE INDEX orders_waiting_for_fact ON orders (waiting_since) WHERE waiting_for IS NOT NULL;

-- Deliveries per closed hour, by provider, account and lag step (ConsoleChartSQL.deliveries'
-- steps; -1: not processed), so the 24-hour and 7-day charts read a week as 168 small groups
-- instead of every delivery's heap row. The console is the only writer: it rolls up closed hours
-- when it first needs them, except hours that still hold a pending delivery (their lag is not
-- final), and marks each rolled hour, deliveries or none, in console_rolled_hours. It deletes
-- hours older than the longest window itself. docs/decisions/0013.
CREATE TABLE console_delivery_hours (
    hour       timestamptz NOT NULL,
    provider   text        NOT NULL,
    account    text        NOT NULL,
    lag_step   bigint      NOT NULL,
    deliveries bigint      NOT NULL,
    PRIMARY KEY (hour, provider, account, lag_step)
);
CREATE TABLE console_rolled_hours (
    hour timestamptz PRIMARY KEY
);
