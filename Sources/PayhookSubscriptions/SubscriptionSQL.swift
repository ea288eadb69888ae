import PayhookLedger
import PayhookPostgres

/// Every statement of recurring charging (admin operations, scheduler, charge job, token
/// lifecycle), named, in one place, so one test prepares them all against the migrated schema.
package struct SubscriptionSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = SubscriptionSQL()

    static let subscriptionColumns = """
        s.id, s.reference, s.status, s.status_reason, s.vault_token_id, t.provider AS token_provider, t.token,
        t.status AS token_status, s.amount_minor, s.currency, s.interval::text AS interval, s.start_at, s.cycle,
        s.next_charge_at, s.max_cycles, s.end_at, s.created_at, s.updated_at, s.canceled_at
        """

    static let chargeColumns = """
        c.id, c.subscription_id, c.cycle, c.attempt, c.idempotency_key, c.amount_minor, c.currency, c.status, c.reason,
        c.decline_code, c.provider, c.provider_payment_id, c.provider_status, c.payment_id, c.order_id, c.scheduled_at,
        c.attempted_at, c.settled_at, c.calls, c.last_error, c.created_at, c.merchant_reference
        """

    // MARK: Admin operations

    /// FOR SHARE: a token being disabled right now (the processor holds the row FOR UPDATE)
    /// is waited for, so a subscription is never created on a token that a committed event
    /// disabled, and the pause that event triggers sees every subscription created before it.
    let lockTokenByID = "SELECT id, provider, token, status, token_kind, payment_profile_id FROM vault_tokens WHERE id = $1 FOR SHARE"
    let lockTokenByProviderToken = """
        SELECT id, provider, token, status, token_kind, payment_profile_id FROM vault_tokens WHERE provider = $1 AND token = $2
        ORDER BY id LIMIT 1 FOR SHARE
        """

    /// $1 token, $2 reference, $3 amount, $4 currency, $5 interval jsonb, $6 start_at (also the
    /// first due date), $7 max_cycles, $8 end_at. Nothing is returned when the reference is taken.
    let insertSubscription = """
        INSERT INTO subscriptions (vault_token_id, reference, amount_minor, currency, interval, start_at, next_charge_at,
                                   max_cycles, end_at)
        VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8)
        ON CONFLICT (reference) DO NOTHING
        RETURNING id
        """

    let selectSubscription = """
        SELECT \(subscriptionColumns) FROM subscriptions s JOIN vault_tokens t ON t.id = s.vault_token_id WHERE s.id = $1
        """

    let lockSubscription = """
        SELECT \(subscriptionColumns) FROM subscriptions s JOIN vault_tokens t ON t.id = s.vault_token_id
        WHERE s.id = $1 FOR UPDATE OF s
        """

    /// $1 status or NULL, $2 provider or NULL, $3 limit. Newest first.
    let listSubscriptions = """
        SELECT \(subscriptionColumns) FROM subscriptions s JOIN vault_tokens t ON t.id = s.vault_token_id
        WHERE ($1::text IS NULL OR s.status = $1) AND ($2::text IS NULL OR t.provider = $2)
        ORDER BY s.id DESC LIMIT $3
        """

    package let selectCharges = """
        SELECT \(chargeColumns) FROM charges c WHERE c.subscription_id = $1 ORDER BY c.cycle, c.attempt
        """

    /// $1 id, $2 status, $3 reason.
    let setStatus = """
        UPDATE subscriptions
        SET status = $2, status_reason = $3, updated_at = now(),
            canceled_at = CASE WHEN $2 = 'canceled' THEN now() ELSE canceled_at END
        WHERE id = $1
        """

    /// $1 id, $2 next cycle, $3 its due date.
    let resume = """
        UPDATE subscriptions SET status = 'active', status_reason = NULL, cycle = $2, next_charge_at = $3, updated_at = now()
        WHERE id = $1
        """

    /// The keys of the never-sent attempts of subscription $1 that are due at $2 (the resuming
    /// operator's clock): their jobs waited while it was paused, and are woken through the queue.
    let waitingChargeKeys = """
        SELECT c.idempotency_key FROM charges c
        WHERE c.subscription_id = $1 AND c.status = 'pending' AND c.attempted_at IS NULL AND c.scheduled_at <= $2
        """

    // MARK: Scheduler

    /// $1 now (the scheduler's clock), $2 batch size. Rows other schedulers hold are skipped.
    let claimDue = """
        SELECT s.id, s.reference, s.interval::text AS interval, s.start_at, s.next_charge_at, s.cycle, s.max_cycles, s.end_at,
               s.amount_minor, s.currency, t.provider
        FROM subscriptions s JOIN vault_tokens t ON t.id = s.vault_token_id
        WHERE s.status = 'active' AND s.next_charge_at <= $1
        ORDER BY s.next_charge_at, s.id
        LIMIT $2
        FOR UPDATE OF s SKIP LOCKED
        """

    /// $1 JSON array of first attempts. A key that exists already is skipped (it cannot, while
    /// the subscription row is locked and advanced in the same transaction; this is the second
    /// line of defence).
    let insertFirstAttempts = """
        INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, reason, provider,
                             scheduled_at, merchant_reference)
        SELECT r.subscription_id, r.cycle, 1, r.idempotency_key, r.amount_minor, r.currency, 'recurring', r.provider,
               r.scheduled_at, \(chargeReference("r.provider", "r.idempotency_key", "s.reference", "r.cycle"))
        FROM jsonb_to_recordset($1::jsonb) AS r(subscription_id bigint, cycle int, idempotency_key text,
                                                amount_minor bigint, currency text, provider text,
                                                scheduled_at timestamptz)
        JOIN subscriptions s ON s.id = r.subscription_id
        ON CONFLICT DO NOTHING
        """

    /// The merchant reference a charge is sent with and the provider's webhook echoes: the
    /// subscription's reference and the cycle, except for PXP, which identifies a charge by its
    /// `merchantTransactionId` (the idempotency key). One rule for every statement that creates
    /// a charge; migration 0011 applied it to the charges stored before.
    static func chargeReference(_ provider: String, _ key: String, _ subscriptionReference: String, _ cycle: String) -> String {
        "CASE WHEN \(provider) = 'pxp' THEN \(key) ELSE \(subscriptionReference) || '-c' || \(cycle) END"
    }

    /// This installation's idempotency-key namespace (migration 0011).
    let keyNamespace = "SELECT key_namespace FROM installation"

    /// $1 JSON array of {id, cycle, next_charge_at, status, status_reason}.
    let advanceSubscriptions = """
        UPDATE subscriptions s
        SET cycle = r.cycle, next_charge_at = r.next_charge_at, status = r.status,
            status_reason = coalesce(r.status_reason, s.status_reason), updated_at = now()
        FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, cycle int, next_charge_at timestamptz, status text,
                                                status_reason text)
        WHERE s.id = r.id
        """

    // MARK: Charge job

    /// What a charge request says of its cycle and credential beyond the charge row: Mercado
    /// Pago's `subscription_data` and first payment reference (`s` subscriptions, `t` vault tokens).
    static let chargeContextColumns = """
        s.interval::text AS subscription_interval, s.start_at AS subscription_start_at,
        s.max_cycles AS subscription_max_cycles, t.first_payment_reference AS token_first_payment_reference,
        t.token_kind, t.payment_profile_id AS token_payment_profile_id
        """

    /// Everything one attempt needs, by its idempotency key.
    let loadCharge = selectLoaded + " WHERE c.idempotency_key = $1"

    /// A charge with its subscription and token, as `ChargeRecurringHandler.Loaded` reads it.
    private static let selectLoaded = """
        SELECT \(chargeColumns), c.previous_transaction_reference, s.status AS subscription_status,
               s.reference AS subscription_reference, s.vault_token_id, t.provider AS token_provider, t.token,
               t.shopper_reference, t.customer_id, t.status AS token_status, \(chargeContextColumns)
        FROM charges c JOIN subscriptions s ON s.id = c.subscription_id JOIN vault_tokens t ON t.id = s.vault_token_id
        """

    /// `loadCharge` by charge id, the charge row locked: what `charges resolve` decides on.
    let lockChargeByID = selectLoaded + " WHERE c.id = $1 FOR UPDATE OF c"

    /// Committed before the provider is called. Freezes the previous transaction reference at the
    /// first call so every retry of this key sends the same request. $1 id, $2 the handler's
    /// clock: `attempted_at` starts the key's idempotency window, measured by the same clock
    /// that later decides whether the window has passed.
    let markAttempted = """
        UPDATE charges
        SET attempted_at = coalesce(attempted_at, $2), calls = calls + 1, updated_at = now(),
            previous_transaction_reference = CASE WHEN attempted_at IS NULL THEN (
                SELECT p.provider_payment_id FROM charges p
                WHERE p.subscription_id = charges.subscription_id AND p.status = 'succeeded'
                ORDER BY p.cycle DESC LIMIT 1) ELSE previous_transaction_reference END
        WHERE id = $1 AND status IN ('pending', 'unknown')
        RETURNING previous_transaction_reference, calls
        """

    /// The common first attempt, for a batch of keys in one statement: `loadCharge` and
    /// `markAttempted` together, for the charges that are certainly to be sent now (never
    /// attempted, still `pending`, subscription not paused, canceled or past due, token active).
    /// Keys it does not return take the one-by-one path, which decides skip, recheck or settled.
    /// $1 text array of idempotency keys, $2 the handler's clock (as for `markAttempted`).
    let beginFirstAttempts = """
        UPDATE charges c
        SET attempted_at = $2, calls = c.calls + 1, updated_at = now(),
            previous_transaction_reference = (
                SELECT p.provider_payment_id FROM charges p
                WHERE p.subscription_id = c.subscription_id AND p.status = 'succeeded'
                ORDER BY p.cycle DESC LIMIT 1)
        FROM subscriptions s, vault_tokens t
        WHERE c.idempotency_key = ANY($1::text[]) AND c.status = 'pending' AND c.attempted_at IS NULL
          AND s.id = c.subscription_id AND s.status NOT IN ('paused', 'canceled', 'past_due')
          AND t.id = s.vault_token_id AND t.status = 'active'
          -- A card id with no payment profile cannot be charged: the one-by-one path skips it.
          AND (t.token_kind IS DISTINCT FROM 'card_id' OR t.payment_profile_id IS NOT NULL)
        RETURNING \(chargeColumns), c.previous_transaction_reference, s.status AS subscription_status,
                  s.reference AS subscription_reference, s.vault_token_id, t.provider AS token_provider, t.token,
                  t.shopper_reference, t.customer_id, t.status AS token_status, \(chargeContextColumns)
        """

    /// $1 id, $2 why. Only a charge never sent to the provider can be skipped.
    let skipCharge = """
        UPDATE charges SET status = 'skipped', last_error = $2, settled_at = now(), updated_at = now()
        WHERE id = $1 AND status = 'pending' AND attempted_at IS NULL
        RETURNING id
        """

    /// $1 id, $2 status (`pending` or `unknown`), $3 error, $4 provider payment id or NULL,
    /// $5 provider status or NULL.
    let recordOpen = """
        UPDATE charges
        SET status = $2, last_error = $3, provider_payment_id = coalesce($4, provider_payment_id),
            provider_status = coalesce($5, provider_status), updated_at = now()
        WHERE id = $1 AND status IN ('pending', 'unknown')
        RETURNING id
        """

    /// $1 id, $2 final status, $3 provider payment id, $4 provider status, $5 decline code.
    let recordSettled = """
        UPDATE charges
        SET status = $2, provider_payment_id = coalesce($3, provider_payment_id), provider_status = $4,
            decline_code = $5, last_error = NULL, settled_at = now(), updated_at = now()
        WHERE id = $1 AND status IN ('pending', 'unknown')
        RETURNING id
        """

    /// $1 id, $2 error, $3 provider payment id: a second success for one cycle (charges_one_success_per_cycle refused
    /// it). The money was taken twice; the row keeps the evidence for the operator.
    let recordDuplicateSuccess = """
        UPDATE charges
        SET status = 'unknown', decline_code = 'duplicate_success', provider_payment_id = $3, last_error = $2,
            updated_at = now()
        WHERE id = $1
        """

    /// Successful charges, in a transaction that first took the processor's advisory locks of
    /// every payment and order among them (`LedgerSQL.shared.lockKeys`, one sorted order): write
    /// the `payments` row each later webhook will update, by the ledger's rules
    /// (`LedgerSQL.chargedPayments`), then settle the charge linked to it.
    /// Returns the charges it settled (one settled already is not). Any error (a second success
    /// of one cycle, one payment twice) fails the whole statement.
    /// $1 JSON array of {charge_id, provider, provider_payment_id, merchant_reference,
    /// provider_status, status}.
    let settleSuccessesWithPayments = """
        WITH target AS (
            SELECT c.id, c.amount_minor, c.currency, r.provider, r.provider_payment_id, r.merchant_reference,
                   r.provider_status, r.status
            FROM jsonb_to_recordset($1::jsonb) AS r(charge_id bigint, provider text, provider_payment_id text,
                                                    merchant_reference text, provider_status text, status text)
            JOIN charges c ON c.id = r.charge_id
            WHERE c.status IN ('pending', 'unknown')
            FOR UPDATE OF c
        ), payment AS (
        \(LedgerSQL.chargedPayments)
        )
        UPDATE charges c
        SET status = 'succeeded', provider_payment_id = t.provider_payment_id, provider_status = t.provider_status,
            decline_code = NULL, last_error = NULL, payment_id = p.id, settled_at = now(), updated_at = now()
        FROM target t JOIN payment p ON p.provider = t.provider AND p.provider_payment_id = t.provider_payment_id
        WHERE c.id = t.id
        RETURNING c.id
        """

    /// The same for Mercado Pago, whose charges are orders (the merchant reference is left to the
    /// webhook), under the same rules as `settleSuccessesWithPayments`.
    /// $1 JSON array of {charge_id, provider, provider_order_id, provider_status, status}.
    let settleSuccessesWithOrders = """
        WITH target AS (
            SELECT c.id, c.amount_minor, c.currency, r.provider, r.provider_order_id, r.provider_status, r.status
            FROM jsonb_to_recordset($1::jsonb) AS r(charge_id bigint, provider text, provider_order_id text,
                                                    provider_status text, status text)
            JOIN charges c ON c.id = r.charge_id
            WHERE c.status IN ('pending', 'unknown')
            FOR UPDATE OF c
        ), placed AS (
        \(LedgerSQL.chargedOrders)
        )
        UPDATE charges c
        SET status = 'succeeded', provider_payment_id = t.provider_order_id, provider_status = t.provider_status,
            decline_code = NULL, last_error = NULL, order_id = o.id, settled_at = now(), updated_at = now()
        FROM target t JOIN placed o ON o.provider = t.provider AND o.provider_order_id = t.provider_order_id
        WHERE c.id = t.id
        RETURNING c.id
        """

    /// What a webhook stored for the charge $1: its payment (Mercado Pago, whose charges are
    /// orders: its order, never one of the order's payments), by the
    /// provider's id when the charge has one, else by the charge's merchant reference. A row that
    /// another charge of the subscription already names is not this one's (an earlier declined
    /// attempt of the cycle shares the reference). A paid row wins over others, then the newest.
    let storedChargePayment = """
        SELECT x.provider_payment_id, x.status
        FROM charges c
        CROSS JOIN LATERAL (
            SELECT p.provider_payment_id, p.status, p.updated_at FROM payments p
            WHERE p.provider = c.provider AND c.provider <> 'mercadopago'
              AND (p.provider_payment_id = c.provider_payment_id
                   OR (c.provider_payment_id IS NULL AND p.merchant_reference = c.merchant_reference))
            UNION ALL
            SELECT o.provider_order_id, o.status, o.updated_at FROM orders o
            WHERE o.provider = c.provider AND c.provider = 'mercadopago' AND o.provider_order_id IS NOT NULL
              AND (o.provider_order_id = c.provider_payment_id
                   OR (c.provider_payment_id IS NULL AND o.merchant_reference = c.merchant_reference))
        ) AS x
        WHERE c.id = $1
          AND NOT EXISTS (SELECT 1 FROM charges other
                          WHERE other.subscription_id = c.subscription_id AND other.id <> c.id
                            AND other.provider = c.provider AND other.provider_payment_id = x.provider_payment_id)
        ORDER BY x.status IN ('authorized', 'captured', 'partially_refunded', 'refunded', 'charged_back') DESC,
                 x.updated_at DESC
        LIMIT 1
        """

    /// The keys of charges whose outcome is still open and whose merchant reference a payment
    /// ($1, bigint array) or order ($2) just written by the processor carries: their jobs are
    /// requeued through the queue, so the handler settles them from that row.
    let openChargeKeysForPayments = """
        SELECT c.idempotency_key FROM payments p
        JOIN charges c ON c.provider = p.provider AND c.merchant_reference = p.merchant_reference
                      AND c.status IN ('pending', 'unknown')
        WHERE p.id = ANY($1::bigint[]) AND p.merchant_reference IS NOT NULL AND c.attempted_at IS NOT NULL
        UNION
        SELECT c.idempotency_key FROM orders o
        JOIN charges c ON c.provider = o.provider AND c.merchant_reference = o.merchant_reference
                      AND c.status IN ('pending', 'unknown')
        WHERE o.id = ANY($2::bigint[]) AND o.merchant_reference IS NOT NULL AND c.attempted_at IS NOT NULL
        """

    /// $1 id: one more look-up of a pending charge.
    let countCheck = "UPDATE charges SET calls = calls + 1, updated_at = now() WHERE id = $1 RETURNING calls"

    /// $1 subscription, $2 cycle, $3 attempt, $4 key, $5 amount, $6 currency, $7 provider, $8 due.
    let insertRetryAttempt = """
        INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, reason, provider,
                             scheduled_at, merchant_reference)
        SELECT $1, $2, $3, $4, $5, $6, 'resubmission', $7, $8, \(chargeReference("$7::text", "$4::text", "s.reference", "$2::int"))
        FROM subscriptions s WHERE s.id = $1
        ON CONFLICT DO NOTHING
        RETURNING id
        """

    /// $1 subscription, $2 reason. A canceled or already past-due one is left alone. A paused one
    /// goes past due: its cycle failed for good, and resuming it is how an operator carries on.
    let markPastDue = """
        UPDATE subscriptions SET status = 'past_due', status_reason = $2, updated_at = now()
        WHERE id = $1 AND status IN ('active', 'completed', 'paused')
        RETURNING id
        """

    // MARK: Token lifecycle

    /// $1 token id, $2 reason.
    let pauseForToken = """
        UPDATE subscriptions SET status = 'paused', status_reason = $2, updated_at = now()
        WHERE vault_token_id = $1 AND status = 'active'
        RETURNING id, reference
        """

}
