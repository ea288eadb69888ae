package import PayhookPostgres

/// The provider sweep's statements. It reads orders, payments and charges, and writes only
/// `sweep_checks`, `orders.expired_at` (through the ledger, `LedgerSQL.expireOrder`) and the
/// lookup rows it adds to `inbound_events`.
package struct SweepSQL: SQLStatementSet {
    package static let shared = SweepSQL()

    /// One sweep at a time across every process: the sweep's transaction takes this lock or
    /// skips the round. `$1` is the lock's key; advisory locks are database-wide, so the key
    /// names the schema, and installations in two schemas of one database never skip each other.
    let tryLock = "SELECT pg_try_advisory_xact_lock(hashtextextended($1::text || ':' || current_schema(), 0)) AS locked"

    /// Registered orders unpaid past the deadline (`$1`), not expired, with no payment that is
    /// paid (`$2`, the paid statuses) or still open, and no lookup still waiting; with the
    /// status of their lookup, if one was queued (one per order: `sweep:order:<id>`).
    let dueOrders = """
        SELECT o.id, o.provider, o.account, o.provider_order_id, o.merchant_reference, o.expected_amount_minor,
               o.expected_currency, o.callback_url, o.registered_at,
               (SELECT e.status FROM inbound_events e
                WHERE e.provider = o.provider AND e.dedup_key = 'sweep:order:' || o.id) AS lookup_status
        FROM orders o
        WHERE o.registered_at IS NOT NULL AND o.registered_at < $1 AND o.expired_at IS NULL
          AND o.fulfillment_status = 'none'
          AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id
                          AND (p.status = ANY($2::text[]) OR p.status IN ('pending', 'authorized')))
          -- An order whose lookup still waits (a provider outage) does not take a place in the
          -- batch from orders behind it.
          AND NOT EXISTS (SELECT 1 FROM inbound_events e WHERE e.provider = o.provider
                          AND e.dedup_key = 'sweep:order:' || o.id AND e.status = 'pending')
        ORDER BY o.registered_at, o.id
        LIMIT $3
        """

    /// Payments `pending` since before `$1` or `authorized` since before `$2`, not looked at since
    /// `$3`; with the provider order id of their order (Mercado Pago looks orders up).
    let duePayments = """
        SELECT p.id, p.provider, p.account, p.provider_payment_id, p.status, o.provider_order_id,
               coalesce(sc.checks, 0) AS checks
        FROM payments p
        LEFT JOIN orders o ON o.id = p.order_id
        LEFT JOIN sweep_checks sc ON sc.subject = 'payment' AND sc.subject_id = p.id
        WHERE ((p.status = 'pending' AND p.updated_at < $1) OR (p.status = 'authorized' AND p.updated_at < $2))
          AND (sc.last_checked_at IS NULL OR sc.last_checked_at < $3)
        ORDER BY p.updated_at, p.id
        LIMIT $4
        """

    /// Charges still `pending` since their first call before `$1`, not looked at since `$2`.
    let dueCharges = """
        SELECT c.id, c.provider, c.provider_payment_id, o.provider_order_id, coalesce(s.account, '') AS account,
               coalesce(sc.checks, 0) AS checks
        FROM charges c
        LEFT JOIN orders o ON o.id = c.order_id
        LEFT JOIN subscriptions sub ON sub.id = c.subscription_id
        LEFT JOIN vault_tokens s ON s.id = sub.vault_token_id
        LEFT JOIN sweep_checks sc ON sc.subject = 'charge' AND sc.subject_id = c.id
        WHERE c.status = 'pending' AND c.attempted_at < $1
          AND (sc.last_checked_at IS NULL OR sc.last_checked_at < $2)
        ORDER BY c.attempted_at, c.id
        LIMIT $3
        """

    /// Queues one lookup; a repeated key (another sweep's, or this round's after a crash) adds
    /// nothing. `$1` provider, `$2` account, `$3` dedup key, `$4` body. Due at once, by the
    /// database's clock as every delivery is.
    let insertLookup = """
        INSERT INTO inbound_events (provider, account, dedup_key, event_type, headers, body)
        VALUES ($1, $2, $3, 'payhook.sweep', '{"x-payhook-origin":"sweep"}', $4)
        ON CONFLICT (provider, dedup_key) DO NOTHING
        """

    /// Records a look at a subject: `$5` true when it waits on a person (no lookup exists).
    let recordCheck = """
        INSERT INTO sweep_checks (subject, subject_id, provider, reason, checks, last_checked_at, waiting_on_provider_since)
        VALUES ($1, $2, $3, $4, 1, $6::timestamptz, CASE WHEN $5::boolean THEN $6::timestamptz END)
        ON CONFLICT (subject, subject_id) DO UPDATE
        SET checks = sweep_checks.checks + 1, last_checked_at = $6::timestamptz, reason = $4,
            waiting_on_provider_since = CASE WHEN $5::boolean THEN coalesce(sweep_checks.waiting_on_provider_since, $6::timestamptz) END
        """

    /// The checks that wait on a person and whose subject is still open, with the subject joined
    /// as `p` (a payment) or `c` (a charge): the list and the gauge must count the same rows.
    private static let openWaitingChecks = """
        FROM sweep_checks sc
        LEFT JOIN payments p ON sc.subject = 'payment' AND p.id = sc.subject_id
        LEFT JOIN charges c ON sc.subject = 'charge' AND c.id = sc.subject_id
        WHERE sc.waiting_on_provider_since IS NOT NULL
          AND ((sc.subject = 'payment' AND p.status IN ('pending', 'authorized'))
               OR (sc.subject = 'charge' AND c.status = 'pending'))
        """

    /// What waits on a person, still open: Adyen payments and charges the sweep could not ask
    /// about and that have not moved since. Also the console's "waiting on the provider" list.
    let waitingOnProvider = """
        SELECT sc.subject, sc.subject_id, sc.provider, sc.reason, sc.checks, sc.waiting_on_provider_since,
               coalesce(p.provider_payment_id, c.provider_payment_id, c.idempotency_key) AS provider_reference,
               coalesce(p.status, c.status) AS status
        \(Self.openWaitingChecks)
        ORDER BY sc.waiting_on_provider_since, sc.subject, sc.subject_id
        LIMIT $1
        """

    /// How many subjects wait on a person, by provider, for the gauge.
    let countWaiting = """
        SELECT sc.provider, count(*) AS waiting
        \(Self.openWaitingChecks)
        GROUP BY sc.provider
        """
}
