import PayhookPostgres

/// Every SQL statement the processor runs, named, in one place.
///
/// Why one place: a test prepares each of them against the migrated schema
/// (`SQLStatementCatalogTests`), so a renamed column fails a unit-speed test instead of a
/// processing run. Values are always `$n` binds.
package struct ProcessingSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = ProcessingSQL()

    /// Due pending events, oldest first. `SKIP LOCKED` lets any number of processors claim
    /// disjoint batches; the row locks last until the batch commits.
    let claimDue = """
        SELECT id, provider, account, body, attempts, received_at FROM inbound_events
        WHERE status = 'pending' AND next_attempt_at <= $1
        ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED
        """

    /// Leases claimed events for a provider fetch made outside the transaction
    /// (docs/decisions/0011): not due again until `$2`, which is also the lease's token.
    let leaseForFetch = """
        UPDATE inbound_events SET next_attempt_at = $2 WHERE id = ANY($1::bigint[])
        """

    /// The leased events still pending and still under this lease's token, locked for the
    /// apply. One whose lease ran out and was claimed again carries another token.
    let reclaimLeased = """
        SELECT id FROM inbound_events
        WHERE id = ANY($1::bigint[]) AND status = 'pending' AND next_attempt_at = $2
        ORDER BY id FOR UPDATE
        """

    /// `$1` is a bigint array literal (`{1,2,3}`): `= ANY` plans as primary-key lookups, where
    /// `IN (SELECT jsonb_array_elements_text(…))` cost milliseconds per batch (bench/normalize).
    ///
    /// No `status = 'pending'` condition: the batch's rows are pending, locked by its claim
    /// since the start of this transaction. With the condition, PostgreSQL may serve the
    /// statement from the partial index of pending rows (`inbound_events_due`), reading every
    /// entry of it for each batch, so that a batch costs more the further processing falls
    /// behind (`ProcessingPlanTests`; bench/README.md, bench/end-to-end).
    let markProcessed = """
        UPDATE inbound_events
        SET status = 'processed', processed_at = clock_timestamp(), attempts = attempts + 1, last_error = NULL
        WHERE id = ANY($1::bigint[])
        """

    let scheduleRetry = """
        UPDATE inbound_events SET attempts = $2, next_attempt_at = $3, last_error = $4
        WHERE id = $1 AND status = 'pending'
        """

    let markDead = """
        UPDATE inbound_events SET status = 'dead', attempts = $2, last_error = $3
        WHERE id = $1 AND status = 'pending'
        """

    /// What the applier reads of a payment (`ApplyPass.Payment`).
    static let paymentColumns = """
        id, status, amount_minor, currency, refunded_minor, chargebacks, chargeback_reversals, capture_failures,
        status_detail, method, funding, merchant_reference, account, order_id, provider_updated_at
        """

    let selectPaymentForUpdate = """
        SELECT \(ProcessingSQL.paymentColumns) FROM payments WHERE provider = $1 AND provider_payment_id = $2 FOR UPDATE
        """

    /// Every payment a pass's events name, read and locked in one statement, in id order (a
    /// stable lock order). `$1` and `$2` are the providers and provider payment ids, pairwise.
    let selectPaymentsForUpdate = """
        SELECT provider, provider_payment_id, \(ProcessingSQL.paymentColumns) FROM payments
        WHERE (provider, provider_payment_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
        ORDER BY id FOR UPDATE
        """

    /// Records an adjustment once per reference; a duplicate changes nothing.
    let insertAdjustment = """
        INSERT INTO payment_adjustments (provider, kind, reference, payment_id, amount_minor, currency, inbound_event_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (provider, kind, reference) DO NOTHING
        """

    /// A failed refund: a tombstone when the refund itself has not arrived yet.
    let markRefundFailed = """
        INSERT INTO payment_adjustments (provider, kind, reference, payment_id, failed, inbound_event_id)
        VALUES ($1, 'refund', $2, $3, true, $4)
        ON CONFLICT (provider, kind, reference) DO UPDATE SET failed = true, updated_at = now()
        """

    /// A failed capture: a tombstone when the capture itself has not arrived yet.
    let markCaptureFailed = """
        INSERT INTO payment_adjustments (provider, kind, reference, payment_id, failed, inbound_event_id)
        VALUES ($1, 'capture', $2, $3, true, $4)
        ON CONFLICT (provider, kind, reference) DO UPDATE SET failed = true, updated_at = now()
        """

    let adjustmentTotals = """
        SELECT coalesce(sum(amount_minor) FILTER (WHERE kind = 'refund' AND NOT failed), 0)::bigint AS refunded,
               count(*) FILTER (WHERE kind = 'chargeback') AS chargebacks,
               count(*) FILTER (WHERE kind = 'chargeback_reversal') AS reversals,
               count(*) FILTER (WHERE kind = 'capture_failure') AS capture_failures
        FROM payment_adjustments WHERE payment_id = $1
        """

    let selectOrderForUpdate = """
        SELECT id, status, merchant_reference, amount_minor, currency, provider_updated_at
        FROM orders WHERE provider = $1 AND provider_order_id = $2 FOR UPDATE
        """

    let selectTokenForUpdate = """
        SELECT id, status, provider_updated_at FROM vault_tokens WHERE provider = $1 AND token = $2 FOR UPDATE
        """

    let insertToken = """
        INSERT INTO vault_tokens (provider, account, token, shopper_reference, customer_id, brand, last4, expiry, status,
                                  provider_updated_at, first_payment_reference, token_kind, payment_profile_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
        ON CONFLICT (provider, token) DO NOTHING RETURNING id
        """

    /// `$10` says whether the incoming details win (newer); otherwise they only fill gaps.
    /// `$11` the first payment reference, kept once set whatever the order of events.
    /// `$12` the token's kind, never changed once known; `$13` the payment profile it charged
    /// through, the newer event's winning like the other details.
    let updateToken = """
        UPDATE vault_tokens SET
            account = CASE WHEN $10 THEN coalesce($2, account) ELSE coalesce(account, $2) END,
            shopper_reference = CASE WHEN $10 THEN coalesce($3, shopper_reference) ELSE coalesce(shopper_reference, $3) END,
            customer_id = CASE WHEN $10 THEN coalesce($4, customer_id) ELSE coalesce(customer_id, $4) END,
            brand = CASE WHEN $10 THEN coalesce($5, brand) ELSE coalesce(brand, $5) END,
            last4 = CASE WHEN $10 THEN coalesce($6, last4) ELSE coalesce(last4, $6) END,
            expiry = CASE WHEN $10 THEN coalesce($7, expiry) ELSE coalesce(expiry, $7) END,
            status = $8,
            provider_updated_at = greatest(provider_updated_at, $9),
            first_payment_reference = coalesce(first_payment_reference, $11),
            token_kind = coalesce(token_kind, $12),
            payment_profile_id = CASE WHEN $10 THEN coalesce($13, payment_profile_id) ELSE coalesce(payment_profile_id, $13) END,
            updated_at = now()
        WHERE id = $1
        """

    /// A pass's history rows in one statement, one binary array per column, inserted (and given
    /// their ids) in array order.
    let insertPaymentEvents = """
        INSERT INTO payment_events (payment_id, order_id, vault_token_id, inbound_event_id, type, occurred_at, data)
        SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::timestamptz[], $7::jsonb[])
        """
}
