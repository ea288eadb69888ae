import PayhookPostgres

/// The statements behind the console's charts and "waiting on" lists (`ConsoleReads+Charts`).
///
/// Every time series binds the same five values: `$1` the window's start and `$2` its end
/// (`timestamptz`), `$3` the interval in seconds, `$4` a provider and `$5` an account (each NULL
/// for all). Each reads only the window's rows through an index on the instant it counts by
/// (BRIN on `received_at`; btrees on `created_at`, `resolved_at`, `fulfilled_at`, migration 0022)
/// and returns one row per interval that has something, so the result is at most a few hundred
/// rows whatever the history holds. The interval number is computed here; Swift fills the gaps.
package struct ConsoleChartSQL: SQLStatementSet {
    package static let shared = ConsoleChartSQL()

    /// Which interval of the window an instant falls in, counting from 0 (in `double precision`:
    /// `extract` would compute it in `numeric`, measurably slower per row).
    static func bucket(_ column: String) -> String {
        "floor(date_part('epoch', \(column) - $1::timestamptz) / $3::bigint)::bigint"
    }

    static func window(_ column: String) -> String {
        "\(column) >= $1::timestamptz AND \(column) < $2::timestamptz"
    }

    static let providerAndAccount = "($4::text IS NULL OR provider = $4) AND ($5::text IS NULL OR account = $5)"

    /// Deliveries stored, per provider, account and interval, split by processing lag into
    /// steps of a quarter power of two of milliseconds (`lag_step` s: lag in
    /// [2^(s/4), 2^((s+1)/4)) ms; NULL while pending). One pass over the window's deliveries
    /// gives both the counts and the lag percentiles (`ConsoleReads.lagPercentile`, within 10 %
    /// of the lag of the delivery at that rank), with a hash aggregate instead of sorting every delivery: on a month
    /// of history the exact `percentile_cont` in a second pass cost twice the time (bench/console).
    /// `$6` and `$7` narrow the rows read to part of the window (the hours not rolled up).
    let deliveries = """
        SELECT provider, account, \(ConsoleChartSQL.bucket("received_at")) AS bucket, \(ConsoleChartSQL.lagStep) AS lag_step,
               count(*) AS n
        FROM inbound_events WHERE \(ConsoleChartSQL.window("received_at")) AND \(ConsoleChartSQL.providerAndAccount)
            AND received_at >= $6::timestamptz AND received_at < $7::timestamptz
        GROUP BY 1, 2, 3, 4
        """

    static let lagStep = """
        CASE WHEN processed_at IS NOT NULL THEN
            floor(ln(greatest(date_part('epoch', processed_at - received_at) * 1000, 1.0)) / ln(2.0) * 4)::bigint END
        """

    /// The same figures from the hourly rollup, for the rolled hours `$6` (a timestamptz array).
    let rolledDeliveries = """
        SELECT provider, account, \(ConsoleChartSQL.bucket("hour")) AS bucket, nullif(lag_step, -1) AS lag_step,
               sum(deliveries)::bigint AS n
        FROM console_delivery_hours WHERE \(ConsoleChartSQL.window("hour")) AND \(ConsoleChartSQL.providerAndAccount)
            AND hour = ANY($6::timestamptz[])
        GROUP BY 1, 2, 3, 4
        """

    /// Hours in [`$1`, `$2`) already rolled up.
    let rolledHours = """
        SELECT hour FROM console_rolled_hours WHERE hour >= $1::timestamptz AND hour < $2::timestamptz ORDER BY hour
        """

    /// Rolls up the closed hours [`$1`, `$2`) (whole UTC hours) from `inbound_events`, except
    /// hours with a delivery still pending, and marks them rolled; hours rolled already change
    /// nothing (two processes may race here). Drops hours, and duplicate counts, older than `$3`.
    let rollUpHours = """
        WITH counted AS (
            SELECT date_bin('1 hour', received_at, '2000-01-01 00:00:00+00') AS hour, provider, account,
                   coalesce(\(ConsoleChartSQL.lagStep), -1) AS lag_step, count(*) AS n,
                   count(*) FILTER (WHERE status = 'pending') AS pending
            FROM inbound_events WHERE received_at >= $1::timestamptz AND received_at < $2::timestamptz
            GROUP BY 1, 2, 3, 4
        ), unsettled AS (
            SELECT DISTINCT hour FROM counted WHERE pending > 0
        ), rolled AS (
            INSERT INTO console_delivery_hours (hour, provider, account, lag_step, deliveries)
            SELECT hour, provider, account, lag_step, n FROM counted WHERE hour NOT IN (SELECT hour FROM unsettled)
            ON CONFLICT DO NOTHING
        ), expired AS (
            DELETE FROM console_delivery_hours WHERE hour < $3::timestamptz
        ), expired_marks AS (
            DELETE FROM console_rolled_hours WHERE hour < $3::timestamptz
        ), expired_duplicates AS (
            DELETE FROM inbound_duplicate_periods WHERE period_start < $3::timestamptz
        )
        INSERT INTO console_rolled_hours (hour)
        SELECT h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS h
        WHERE h NOT IN (SELECT hour FROM unsettled)
        ON CONFLICT DO NOTHING
        """

    /// Refusals recorded in `rejected_deliveries` (within its per-address quota), per provider,
    /// account and interval.
    let refusals = """
        SELECT provider, account, \(ConsoleChartSQL.bucket("received_at")) AS bucket, count(*) AS n
        FROM rejected_deliveries WHERE \(ConsoleChartSQL.window("received_at")) AND \(ConsoleChartSQL.providerAndAccount)
        GROUP BY 1, 2, 3
        """

    /// Duplicate deliveries (acknowledged, stored once) per provider, account and interval, from
    /// the five-minute counts ingress keeps (`inbound_duplicate_periods`, migration 0025); every
    /// window's interval is a whole number of periods, so each period falls in one interval.
    let duplicates = """
        SELECT provider, account, \(ConsoleChartSQL.bucket("period_start")) AS bucket, sum(duplicates)::bigint AS n
        FROM inbound_duplicate_periods WHERE \(ConsoleChartSQL.window("period_start")) AND \(ConsoleChartSQL.providerAndAccount)
        GROUP BY 1, 2, 3
        """

    /// Dead letters opened and resolved (replayed or discarded) per interval, and how many of
    /// the opened were orders sent to review (a `fulfill_order` job discarded with
    /// `fulfillment_mismatch`). Dead letters carry no account: this one binds only `$1`–`$4`.
    let deadLetters = """
        SELECT bucket, sum(opened)::bigint AS opened, sum(resolved)::bigint AS resolved, sum(reviews)::bigint AS reviews FROM (
            SELECT \(ConsoleChartSQL.bucket("created_at")) AS bucket, count(*) AS opened, 0 AS resolved,
                   count(*) FILTER (WHERE source = 'job' AND reason LIKE 'fulfillment_mismatch%') AS reviews
            FROM dead_letters WHERE \(ConsoleChartSQL.window("created_at")) AND ($4::text IS NULL OR provider = $4)
            GROUP BY 1
            UNION ALL
            SELECT \(ConsoleChartSQL.bucket("resolved_at")), 0, count(*), 0
            FROM dead_letters WHERE \(ConsoleChartSQL.window("resolved_at")) AND ($4::text IS NULL OR provider = $4)
            GROUP BY 1
        ) AS counts GROUP BY bucket ORDER BY bucket
        """

    /// Orders fulfilled (the merchant acknowledged `order.paid`) per interval.
    let fulfillments = """
        SELECT \(ConsoleChartSQL.bucket("fulfilled_at")) AS bucket, count(*) AS fulfilled
        FROM orders WHERE \(ConsoleChartSQL.window("fulfilled_at")) AND \(ConsoleChartSQL.providerAndAccount)
        GROUP BY 1 ORDER BY 1
        """

    /// Charge attempts by outcome per interval (the console binds whole days). Charges carry a
    /// provider but no account: this one binds only `$1`–`$4`.
    let charges = """
        SELECT \(ConsoleChartSQL.bucket("created_at")) AS bucket, status, count(*) AS n
        FROM charges WHERE \(ConsoleChartSQL.window("created_at")) AND ($4::text IS NULL OR provider = $4)
        GROUP BY 1, 2 ORDER BY 1, 2
        """

    /// The newest stored delivery of a provider (`$1`), optionally of one account (`$2`).
    let lastDelivery = """
        SELECT id, account, dedup_key, event_type, received_at, status FROM inbound_events
        WHERE provider = $1 AND ($2::text IS NULL OR account = $2) ORDER BY id DESC LIMIT 1
        """

    /// The newest recorded refusal (a signature that did not verify, a missing header).
    let lastRefusal = """
        SELECT id, account, reason, coalesce(remote_addr, '') AS remote_addr, received_at FROM rejected_deliveries
        WHERE provider = $1 AND ($2::text IS NULL OR account = $2) ORDER BY id DESC LIMIT 1
        """

    /// Which key of the ring verified a provider's (`$1`) deliveries since `$3`, by account (`$2`
    /// narrows to one): 0 is the current key, higher a previous one still accepted (migration
    /// 0025; NULL for deliveries stored before it). Reads the window through the BRIN index on
    /// `received_at`.
    let keyRingUse = """
        SELECT account, count(*) FILTER (WHERE key_index = 0) AS current_key,
               count(*) FILTER (WHERE key_index > 0) AS previous_key,
               count(*) FILTER (WHERE key_index IS NULL) AS not_recorded,
               max(received_at) FILTER (WHERE key_index > 0) AS last_previous
        FROM inbound_events
        WHERE provider = $1 AND ($2::text IS NULL OR account = $2) AND received_at >= $3::timestamptz
        GROUP BY account ORDER BY account LIMIT 100
        """

    /// Waiting on the provider, with payhook still on it: subjects the sweep is asking the
    /// provider about (a lookup exists), and registered orders whose fulfillment waits for a
    /// fact a webhook has not brought yet. Oldest first; `$1` caps the rows.
    let providerChecks = """
        SELECT * FROM (
            SELECT sc.subject, sc.subject_id, sc.provider, sc.reason, sc.checks, sc.last_checked_at,
                   coalesce(p.provider_payment_id, c.provider_payment_id, c.idempotency_key, o.merchant_reference, o.provider_order_id)
                       AS reference,
                   coalesce(p.status, c.status, 'unpaid') AS status,
                   coalesce(p.updated_at, c.attempted_at, c.created_at, o.registered_at, sc.last_checked_at) AS since
            FROM sweep_checks sc
            LEFT JOIN payments p ON sc.subject = 'payment' AND p.id = sc.subject_id
            LEFT JOIN charges c ON sc.subject = 'charge' AND c.id = sc.subject_id
            LEFT JOIN orders o ON sc.subject = 'order' AND o.id = sc.subject_id
            WHERE sc.waiting_on_provider_since IS NULL
              AND ((sc.subject = 'payment' AND p.status IN ('pending', 'authorized'))
                   OR (sc.subject = 'charge' AND c.status = 'pending')
                   OR (sc.subject = 'order' AND o.fulfillment_status = 'none' AND o.expired_at IS NULL))
            UNION ALL
            SELECT 'fulfillment', o.id, o.provider, o.waiting_for, 0, NULL::timestamptz,
                   coalesce(o.merchant_reference, o.provider_order_id), 'not fulfilled', o.waiting_since
            FROM orders o WHERE o.waiting_for IS NOT NULL
        ) AS waiting ORDER BY since LIMIT $1
        """

    /// Waiting on the merchant: callbacks not delivered, one row per endpoint, with the newest
    /// answer, the earliest retry the queue holds and the oldest open dead letter of a callback
    /// given up (replaying it sends the callback again). `$1` caps the endpoints listed.
    let merchantEndpoints = """
        SELECT coalesce(c.url, '') AS url, count(*) AS callbacks, count(*) FILTER (WHERE c.status = 'failed') AS given_up,
               min(c.created_at) AS oldest,
               (array_agg(c.last_status_code ORDER BY c.id DESC) FILTER (WHERE c.attempts > 0))[1] AS last_status_code,
               (array_agg(c.last_error ORDER BY c.id DESC) FILTER (WHERE c.attempts > 0))[1] AS last_error,
               min(j.run_at) FILTER (WHERE j.state IN ('available', 'retryable')) AS next_attempt,
               (array_agg(c.order_id ORDER BY c.id))[1] AS first_order,
               (array_agg(c.webhook_id ORDER BY c.id))[1] AS first_webhook,
               (array_agg(d.id ORDER BY d.id) FILTER (WHERE d.id IS NOT NULL))[1] AS first_letter
        FROM merchant_callbacks c LEFT JOIN jobs j ON j.unique_key = 'merchant_callback:' || c.webhook_id
        LEFT JOIN dead_letters d ON d.source = 'job' AND d.source_id = j.id AND d.status = 'open'
        WHERE c.status IN ('pending', 'failed') AND (c.attempts > 0 OR c.created_at < now() - interval '5 minutes')
        GROUP BY c.url ORDER BY count(*) DESC LIMIT $1
        """

    /// Waiting on a human: orders in review with their reason, oldest first, and the dead
    /// letter that holds the discarded check (replaying it re-checks the order).
    let ordersInReview = """
        SELECT o.id, o.provider, o.account, coalesce(o.merchant_reference, o.provider_order_id, '') AS reference,
               coalesce(o.review_reason, '') AS reason, o.updated_at, d.id AS letter
        FROM orders o
        LEFT JOIN jobs j ON j.unique_key = 'fulfill_order:' || o.id
        LEFT JOIN dead_letters d ON d.source = 'job' AND d.source_id = j.id AND d.status = 'open'
        WHERE o.fulfillment_status = 'needs_review' ORDER BY o.updated_at LIMIT $1
        """

    /// Waiting on a human: charges whose outcome is unknown and that only `charges resolve` settles.
    let unknownCharges = """
        SELECT id, subscription_id, coalesce(provider, '') AS provider, idempotency_key, amount_minor, currency, created_at,
               coalesce(last_error, '') AS last_error
        FROM charges WHERE status = 'unknown' ORDER BY created_at LIMIT $1
        """
}
