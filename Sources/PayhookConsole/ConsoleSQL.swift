import PayhookPostgres
import PayhookOperations

/// The read-only statements behind the on-call console's pages (`ConsoleReads`), named, in one
/// place, so `ConsoleSQLTests` prepares each against the migrated schema. Values are `$n` binds;
/// optional filters are `$n IS NULL OR …` as in `OperationsSQL`.
///
/// Every statement is bounded (a `LIMIT`, or an aggregate over an indexed slice) because the
/// console is opened when something is already wrong, and must not add to the load.
package struct ConsoleSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties, and
    /// `SQLStatementCatalogTests` prepares them. Fragments that are not statements stay static.
    package static let shared = ConsoleSQL()

    let backlog = """
        SELECT count(*) AS pending, min(received_at) AS oldest FROM inbound_events WHERE status = 'pending'
        """

    let openLettersByReason = """
        SELECT reason, coalesce(provider, '') AS provider, source, count(*) AS n, min(created_at) AS oldest
        FROM dead_letters WHERE status = 'open' GROUP BY reason, provider, source ORDER BY n DESC, reason LIMIT 50
        """

    /// Unfinished and discarded jobs (succeeded ones only grow; `OperationsSQL.gauges` reasons
    /// the same way), plus how many finished in the last hour by kind.
    let jobsByKindAndState = """
        SELECT kind, state, count(*) AS n FROM jobs
        WHERE state IN ('available', 'running', 'retryable', 'discarded')
           OR (state IN ('succeeded', 'cancelled') AND finalized_at >= now() - interval '1 hour')
        GROUP BY kind, state ORDER BY kind, state
        """

    let pastDueCount = "SELECT count(*) AS n FROM subscriptions WHERE status = 'past_due'"

    /// The operations' dead-letter filter (`$1`-`$5`, as `dead-letters list` binds them) plus the
    /// list's upper time bound, `$6`.
    private static let letterFilter = """
        \(OperationsSQL.letterFilter)
          AND ($6::timestamptz IS NULL OR created_at < $6)
        """

    /// One page of letters, newest first: `$7` is the last id of the previous page (keyset, so
    /// page 1,000 costs what page 1 does), `$8` the page size plus one (to know there is more).
    let letterPage = """
        SELECT \(OperationsSQL.letterColumns) FROM dead_letters \(ConsoleSQL.letterFilter)
          AND ($7::bigint IS NULL OR id < $7)
        ORDER BY id DESC LIMIT $8
        """

    let letterCount = "SELECT count(*) AS n FROM dead_letters \(ConsoleSQL.letterFilter)"

    /// Ids of the open letters matching the filter, oldest first: what a bulk replay works through.
    let openLetterIDs = "SELECT id FROM dead_letters \(ConsoleSQL.letterFilter) AND status = 'open' ORDER BY id"

    /// Audit rows about one target (`dead_letter:7`, `subscription:3`), newest first. A name the
    /// caller gave (`actor_note`) is shown in brackets beside the authenticated actor.
    let auditForTarget = """
        SELECT actor || coalesce(' (' || actor_note || ')', '') AS actor, action, details::text AS details, at
        FROM audit_log WHERE target = $1 ORDER BY id DESC LIMIT 50
        """

    // Search: each statement matches one kind of key. Provider-scoped unique indexes lead with
    // `provider`, so the providers are named to let the planner use them.
    static let providers = "ARRAY['mercadopago', 'adyen', 'pxp']"

    let searchPayments = """
        SELECT id FROM payments
        WHERE (provider = ANY(\(ConsoleSQL.providers)) AND provider_payment_id = $1)
           OR (provider = ANY(\(ConsoleSQL.providers)) AND merchant_reference = $1)
        ORDER BY id DESC LIMIT 20
        """

    let searchOrders = """
        SELECT id FROM orders
        WHERE id = $2 OR (provider = ANY(\(ConsoleSQL.providers)) AND provider_order_id = $1)
           OR (provider = ANY(\(ConsoleSQL.providers)) AND merchant_reference = $1)
        ORDER BY id DESC LIMIT 20
        """

    let searchInbound = """
        SELECT \(ConsoleSQL.inboundColumns) FROM inbound_events
        WHERE provider = ANY(\(ConsoleSQL.providers)) AND dedup_key = $1 ORDER BY id DESC LIMIT 20
        """

    let searchCharges = """
        SELECT subscription_id, id FROM charges
        WHERE idempotency_key = $1 OR (provider = ANY(\(ConsoleSQL.providers)) AND provider_payment_id = $1)
           OR (provider = ANY(\(ConsoleSQL.providers)) AND merchant_reference = $1)
        ORDER BY id DESC LIMIT 20
        """

    static let inboundColumns = """
        id, provider, account, dedup_key, event_type, received_at, status, attempts, processed_at, last_error
        """

    let payment = """
        SELECT id, provider, account, provider_payment_id, order_id, merchant_reference, amount_minor, currency,
               refunded_minor, status, status_detail, created_at, updated_at
        FROM payments WHERE id = $1
        """

    /// The deliveries that changed a payment: through its canonical events or its adjustments.
    let paymentInbound = """
        SELECT \(ConsoleSQL.inboundColumns) FROM inbound_events WHERE id IN (
            SELECT inbound_event_id FROM payment_events WHERE payment_id = $1 AND inbound_event_id IS NOT NULL
            UNION SELECT inbound_event_id FROM payment_adjustments WHERE payment_id = $1 AND inbound_event_id IS NOT NULL)
        ORDER BY id LIMIT 100
        """

    let paymentEvents = """
        SELECT type, occurred_at, recorded_at, inbound_event_id FROM payment_events
        WHERE payment_id = $1 ORDER BY id LIMIT 100
        """

    /// Jobs by unique key (`fulfill_order:<order>`, `merchant_callback:<webhook id>`, a charge's
    /// idempotency key); `$1` is a text array.
    let jobsByKey = """
        SELECT id, kind, state, attempt, max_attempts, created_at, finalized_at, unique_key FROM jobs
        WHERE unique_key = ANY($1::text[]) ORDER BY id
        """

    /// The dead letters of deliveries $1 and jobs $2 (bigint array literals), open or resolved.
    let deadLettersOfSources = """
        SELECT id, reason, error, status, created_at, resolved_at, resolved_by, note FROM dead_letters
        WHERE (source = 'inbound_event' AND source_id = ANY($1::bigint[])) OR (source = 'job' AND source_id = ANY($2::bigint[]))
        ORDER BY id LIMIT 100
        """

    let chargesOfPayment = """
        SELECT subscription_id, id, cycle, attempt, idempotency_key, status, created_at, updated_at FROM charges
        WHERE provider = ANY(\(ConsoleSQL.providers)) AND provider_payment_id = $1 ORDER BY id
        """

    let callbacksOfSubscription = """
        SELECT webhook_id, type, status, attempts, last_status_code, created_at, delivered_at
        FROM merchant_callbacks WHERE subscription_id = $1 ORDER BY id LIMIT 100
        """

    let paymentsOfOrder = "SELECT id FROM payments WHERE order_id = $1 ORDER BY id LIMIT 50"

    /// The payments one delivery changed, through its canonical events.
    let paymentsOfInbound = """
        SELECT DISTINCT payment_id AS id FROM payment_events WHERE inbound_event_id = $1 AND payment_id IS NOT NULL LIMIT 20
        """
}
