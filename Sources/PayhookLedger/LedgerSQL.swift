import PayhookPostgres

/// The statements that write `payments` and `orders` on behalf of processing, charge settlement,
/// order registration, the provider sweep, fulfillment and merchant callbacks, and the advisory
/// locks they take first, named, in one place (docs/decisions/0016, 0019).
///
/// Why here: several features write these rows (the processor from webhooks, charge settlement
/// from the provider's answer, the merchant registering an order), and they must write by one
/// set of rules under one set of locks.
/// Callers hold the ``AdvisoryLockKey`` locks of the rows they write. Values are always `$n`
/// binds; a test prepares each statement against the migrated schema (`SQLStatementCatalogTests`).
package struct LedgerSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = LedgerSQL()

    /// Transaction-scoped advisory locks on every business key the batch touches, taken in
    /// one sorted order so that two processors never wait on each other in a cycle.
    /// `$1` is a JSON array of key strings; the first lock key keeps payhook's locks apart
    /// from other users of two-key advisory locks.
    package let lockKeys = """
        SELECT count(pg_advisory_xact_lock(1886677611, h)) AS locked
        FROM (SELECT DISTINCT hashtext(k) AS h FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY 1) AS keys
        """

    // MARK: Payments

    /// A placeholder row so that adjustments can reference the payment before its state is
    /// decided; the same transaction updates it.
    package let insertPlaceholderPayment = """
        INSERT INTO payments (provider, provider_payment_id, status) VALUES ($1, $2, 'pending')
        ON CONFLICT (provider, provider_payment_id) DO NOTHING RETURNING id
        """

    /// One new payment, written before its pass ends because an adjustment must reference its
    /// row (`ApplyPass.rowID`). No `ON CONFLICT`: the caller holds the payment's advisory lock
    /// and has read that the row does not exist, and every other writer of `payments` takes the same lock. A
    /// conflict would mean a writer that skipped it; the statement then fails and the event is
    /// retried. (`ON CONFLICT DO NOTHING` cost each insert a third more: the speculative
    /// insertion checks the unique index before the insert and again after it.)
    package let insertPayment = """
        INSERT INTO payments (provider, account, provider_payment_id, order_id, merchant_reference, amount_minor,
                              currency, refunded_minor, status, status_detail, method, funding, provider_updated_at,
                              chargebacks, chargeback_reversals, capture_failures)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
        RETURNING id
        """

    /// A pass's new payments in one statement (`ApplyPass`): `$1`, `$2` the providers and
    /// provider payment ids, `$3` – `$16` the state columns in this order, one binary array
    /// each. No `ON CONFLICT`, for the reason given at `insertPayment`.
    package let insertPayments = """
        INSERT INTO payments (provider, provider_payment_id, account, order_id, merchant_reference, amount_minor, currency,
                              refunded_minor, status, status_detail, method, funding, provider_updated_at,
                              chargebacks, chargeback_reversals, capture_failures)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::text[],
                             $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::timestamptz[],
                             $14::bigint[], $15::bigint[], $16::bigint[])
        RETURNING provider, provider_payment_id, id
        """

    /// A pass's changed payments in one statement: `$1` their ids, `$2` – `$15` the state columns
    /// in `insertPayments`' order. Each id appears once: a pass writes a payment's last state.
    package let updatePayments = """
        UPDATE payments AS p SET account = v.account, order_id = v.order_id, merchant_reference = v.merchant_reference,
               amount_minor = v.amount_minor, currency = v.currency, refunded_minor = v.refunded_minor, status = v.status,
               status_detail = v.status_detail, method = v.method, funding = v.funding,
               provider_updated_at = v.provider_updated_at, chargebacks = v.chargebacks,
               chargeback_reversals = v.chargeback_reversals, capture_failures = v.capture_failures, updated_at = now()
        FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::bigint[],
                    $8::text[], $9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::bigint[], $14::bigint[],
                    $15::bigint[])
             AS v(id, account, order_id, merchant_reference, amount_minor, currency, refunded_minor, status,
                  status_detail, method, funding, provider_updated_at, chargebacks, chargeback_reversals, capture_failures)
        WHERE p.id = v.id
        """

    /// The payment's captured sum from its capture rows: `NULL` while none counts, so that
    /// "no capture reported" stays distinct from a capture of zero. Written only after a
    /// capture or a capture failure; the pass's payment writes never touch the column.
    package let updateCapturedMinor = """
        UPDATE payments SET captured_minor = (
            SELECT sum(amount_minor) FROM payment_adjustments WHERE payment_id = $1 AND kind = 'capture' AND NOT failed)
        WHERE id = $1
        """

    // MARK: Orders

    /// No conflict target: a clash on the order id (a race) or on the merchant reference (two
    /// provider orders for one reference) both return no row, and the caller tells them apart.
    package let insertOrder = """
        INSERT INTO orders (provider, account, provider_order_id, merchant_reference, amount_minor, currency, status,
                            provider_updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT DO NOTHING RETURNING id
        """

    package let updateOrder = """
        UPDATE orders SET merchant_reference = coalesce(merchant_reference, $2), amount_minor = $3, currency = $4,
               status = $5, provider_updated_at = $6, updated_at = now()
        WHERE id = $1
        """

    // MARK: Rows a successful recurring charge made

    /// The `payments` rows of successful recurring charges (Adyen, PXP), as one data-modifying
    /// `WITH` item of the statement that settles the charges: it reads the relation `target`
    /// (`provider`, `provider_payment_id`, `merchant_reference`, `amount_minor`, `currency`,
    /// `status`) and returns `id, provider, provider_payment_id` for the charges to link to.
    ///
    /// The row is the one the provider's webhook later updates through the processor. A row the
    /// webhook wrote first keeps all it has: the charge only fills what is still missing, and never
    /// changes a status or an account. The caller holds the rows' advisory locks
    /// (``AdvisoryLockKey/payment(provider:id:)``), as every writer of `payments` does.
    package static let chargedPayments = """
        INSERT INTO payments (provider, account, provider_payment_id, merchant_reference, amount_minor, currency, status)
        SELECT provider, '', provider_payment_id, merchant_reference, amount_minor, currency, status FROM target
        ON CONFLICT (provider, provider_payment_id) DO UPDATE
        SET merchant_reference = coalesce(payments.merchant_reference, EXCLUDED.merchant_reference),
            amount_minor = coalesce(payments.amount_minor, EXCLUDED.amount_minor),
            currency = coalesce(payments.currency, EXCLUDED.currency), updated_at = now()
        RETURNING id, provider, provider_payment_id
        """

    /// The `orders` rows of successful Mercado Pago charges, which are orders, under the rules of
    /// ``chargedPayments``: reads `target` (`provider`, `provider_order_id`, `amount_minor`,
    /// `currency`, `status`; the merchant reference is left to the webhook) and returns
    /// `id, provider, provider_order_id`. The caller holds the rows' advisory locks
    /// (``AdvisoryLockKey/order(provider:id:)``).
    package static let chargedOrders = """
        INSERT INTO orders (provider, account, provider_order_id, amount_minor, currency, status)
        SELECT provider, '', provider_order_id, amount_minor, currency, status FROM target
        ON CONFLICT (provider, provider_order_id) WHERE provider_order_id IS NOT NULL DO UPDATE
        SET amount_minor = coalesce(orders.amount_minor, EXCLUDED.amount_minor),
            currency = coalesce(orders.currency, EXCLUDED.currency), updated_at = now()
        RETURNING id, provider, provider_order_id
        """

    // MARK: Order registration

    package let insertRegisteredOrder = """
        INSERT INTO orders (provider, account, provider_order_id, merchant_reference, expected_amount_minor,
                            expected_currency, callback_url, registered_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, now())
        ON CONFLICT DO NOTHING RETURNING id
        """

    /// An order a webhook created before the merchant registered it. The registered reference
    /// replaces a provider-reported one, so that a payment naming another reference is caught
    /// as a mismatch; the order is a merchant order now, linked to no other. Returns no row
    /// when the reference belongs to another registered order.
    package let adoptOrder = """
        UPDATE orders SET merchant_reference = coalesce($2, merchant_reference),
               provider_order_id = coalesce(provider_order_id, $3), expected_amount_minor = $4,
               expected_currency = $5, callback_url = $6, registered_at = now(), merchant_order_id = NULL, updated_at = now()
        WHERE id = $1
          AND NOT EXISTS (SELECT 1 FROM orders other
                          WHERE other.id <> $1 AND other.provider = orders.provider AND other.account = orders.account
                            AND other.merchant_reference = coalesce($2, orders.merchant_reference)
                            AND other.registered_at IS NOT NULL)
        RETURNING id
        """

    /// Links earlier payments of the order's account ($4) to an order registered after they arrived.
    package let linkPaymentsToOrder = """
        UPDATE payments SET order_id = $1, updated_at = now()
        WHERE provider = $2 AND merchant_reference = $3 AND account = $4 AND order_id IS NULL
        """

    /// Links every unregistered provider order of reference `$4` (provider `$2`, account `$3`)
    /// to the order `$1` just registered with it.
    package let linkProviderOrdersToOrder = """
        UPDATE orders SET merchant_order_id = $1, updated_at = now()
        WHERE provider = $2 AND account = $3 AND merchant_reference = $4 AND registered_at IS NULL
          AND merchant_order_id IS NULL AND id <> $1
        """

    // MARK: The provider sweep

    /// Expires an order that is still unpaid; nothing when a payment arrived meanwhile.
    /// `$2` the paid statuses, `$3` the time.
    package let expireOrder = """
        UPDATE orders SET expired_at = $3, updated_at = now()
        WHERE id = $1 AND expired_at IS NULL AND fulfillment_status = 'none'
          AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = orders.id AND p.status = ANY($2::text[]))
        RETURNING id
        """

    // MARK: Fulfillment

    /// Payments just written (`$1`, a bigint array) that name no order but carry the merchant
    /// reference of a registered order of the same account (Adyen and PXP payments know only
    /// the reference; two accounts may both have an order `1001`).
    /// Returns the orders they now belong to.
    ///
    /// The batch's payments are found by primary key behind an `OFFSET 0` fence: with
    /// `order_id IS NULL` beside `id = ANY($1)`, the generic plan chose the `payments_order`
    /// index and read every payment without an order, a cost that grew with the number of such
    /// payments (bench/README.md, "Processing throughput", has the figures).
    package let linkPaymentsByReference = """
        WITH candidates AS (
            SELECT p.id, o.id AS order_id
            FROM (SELECT id, provider, account, merchant_reference, order_id
                  FROM payments WHERE id = ANY($1::bigint[]) OFFSET 0) AS p
            CROSS JOIN LATERAL (SELECT o.id FROM orders o
                                WHERE o.provider = p.provider AND o.account = p.account
                                  AND o.merchant_reference = p.merchant_reference
                                  AND o.registered_at IS NOT NULL) AS o
            WHERE p.order_id IS NULL AND p.merchant_reference IS NOT NULL
        )
        UPDATE payments p SET order_id = c.order_id, updated_at = now()
        FROM candidates c WHERE p.id = c.id
        RETURNING c.order_id
        """

    /// Links the provider orders `$1` (a bigint array) that processing just wrote to the
    /// registered order of their provider, account and reference, and names for each the order
    /// fulfillment follows: the registered order it belongs to, or itself.
    /// (A data-modifying CTE's changes are invisible to the rest of its statement, so the
    /// mapping reads the new link from `linked`.)
    package let linkProviderOrders = """
        WITH linked AS (
            UPDATE orders p SET merchant_order_id = m.id, updated_at = now()
            FROM orders m
            WHERE p.id = ANY($1::bigint[]) AND p.registered_at IS NULL AND p.merchant_order_id IS NULL
              AND p.merchant_reference IS NOT NULL
              AND m.provider = p.provider AND m.account = p.account AND m.merchant_reference = p.merchant_reference
              AND m.registered_at IS NOT NULL AND m.id <> p.id
            RETURNING p.id, m.id AS merchant_order_id
        )
        SELECT DISTINCT coalesce(l.merchant_order_id, o.merchant_order_id, o.id) AS order_id
        FROM orders o LEFT JOIN linked l ON l.id = o.id
        WHERE o.id = ANY($1::bigint[])
        """

    /// The follow-ups owed for the orders `$1` (a bigint array):
    ///
    /// - `paid`: registered orders not yet in fulfillment that now have a payment in one of
    ///   the paid statuses `$2` (a text array); they move to `pending` here, and the caller
    ///   enqueues `fulfill_order` in the same transaction.
    /// - `overpaid`: paid payments of orders whose `order.paid` callback exists that the
    ///   callback did not report paid: a second payment (a duplicate checkout) the shopper made
    ///   after the order was reported paid; the caller queues `order.overpaid`.
    /// - `reversal`: payments of orders whose `order.paid` callback exists that are now
    ///   refunded (in part) or charged back, or that the `order.paid` body reported paid and
    ///   that are paid no more (a capture that failed, an authorisation canceled or expired),
    ///   or that `order.paid` reported `authorized` (counted in full) and whose captures took
    ///   less (`short_capture`), or that have a failed refund or a chargeback reversed (reported
    ///   only when the refund or chargeback was reported); the caller queues `order.refunded` / `order.charged_back` / `order.payment_reversed`
    ///   callbacks, keyed so a repeat of the same fact is a no-op.
    package let fulfillmentFollowUps = """
        WITH paid AS (
            UPDATE orders o SET fulfillment_status = 'pending', updated_at = now()
            WHERE o.id = ANY($1::bigint[]) AND o.registered_at IS NOT NULL AND o.fulfillment_status = 'none'
              AND EXISTS (SELECT 1 FROM payments p
                          WHERE p.order_id IN (SELECT o.id UNION ALL SELECT l.id FROM orders l WHERE l.merchant_order_id = o.id)
                            AND p.status = ANY($2::text[]))
            RETURNING o.id
        )
        SELECT 'paid' AS follow_up, id AS order_id, NULL::bigint AS payment_id, false AS short_capture FROM paid
        UNION ALL
        SELECT 'reversal', r.order_id, r.id, r.short_capture
        FROM (SELECT c.order_id, p.id, p.refunded_minor, p.status, p.chargeback_reversals,
                     EXISTS (SELECT 1 FROM payment_adjustments a WHERE a.payment_id = p.id AND a.kind = 'refund' AND a.failed)
                         AS refund_failed,
                     (p.status = 'captured' AND p.captured_minor < p.amount_minor
                      AND EXISTS (SELECT 1 FROM jsonb_array_elements((c.body::jsonb) -> 'data' -> 'payments') AS reported
                                  WHERE reported ->> 'provider_payment_id' = p.provider_payment_id
                                    AND reported ->> 'status' = 'authorized')) AS short_capture,
                     EXISTS (SELECT 1 FROM jsonb_array_elements((c.body::jsonb) -> 'data' -> 'payments') AS reported
                             WHERE reported ->> 'provider_payment_id' = p.provider_payment_id
                               AND reported ->> 'status' = ANY($2::text[])) AS reported_paid
              FROM payments p
              JOIN orders po ON po.id = p.order_id
              JOIN merchant_callbacks c ON c.order_id = coalesce(po.merchant_order_id, po.id) AND c.type = 'order.paid'
              WHERE p.order_id IN (SELECT o.id FROM orders o
                                   WHERE o.id = ANY($1::bigint[]) OR o.merchant_order_id = ANY($1::bigint[]))) AS r
        WHERE r.refunded_minor > 0 OR r.status IN ('refunded', 'partially_refunded', 'charged_back')
           OR (r.status <> ALL($2::text[]) AND r.reported_paid) OR r.short_capture
           OR r.refund_failed OR r.chargeback_reversals > 0
        UNION ALL
        SELECT 'overpaid', c.order_id, p.id, false
        FROM payments p
        JOIN orders po ON po.id = p.order_id
        JOIN merchant_callbacks c ON c.order_id = coalesce(po.merchant_order_id, po.id) AND c.type = 'order.paid'
        WHERE p.order_id IN (SELECT o.id FROM orders o
                             WHERE o.id = ANY($1::bigint[]) OR o.merchant_order_id = ANY($1::bigint[]))
          AND p.status = ANY($2::text[])
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements((c.body::jsonb) -> 'data' -> 'payments') AS reported
                          WHERE reported ->> 'provider_payment_id' = p.provider_payment_id
                            AND reported ->> 'status' = ANY($2::text[]))
        """

    /// An order already reported paid received more money (`$2`, the reason): the console shows
    /// why it needs a person, while its fulfillment stays what it is.
    package let markOrderOverpaid = """
        UPDATE orders SET review_reason = $2, updated_at = now() WHERE id = $1
        """

    /// `order.paid` is queued: the order waits for the merchant's acknowledgement. An order in
    /// review whose re-check now matches leaves review.
    package let markOrderFulfillmentPending = """
        UPDATE orders SET fulfillment_status = 'pending', review_reason = NULL, waiting_for = NULL, waiting_since = NULL,
               updated_at = now()
        WHERE id = $1 AND fulfillment_status IN ('none', 'needs_review', 'pending')
        """

    /// The check lacks a fact (`$2`): the order waits for it, since the first check that did.
    package let markOrderWaiting = """
        UPDATE orders SET waiting_for = $2, waiting_since = coalesce(waiting_since, now()), updated_at = now()
        WHERE id = $1
        """

    package let markOrderNeedsReview = """
        UPDATE orders SET fulfillment_status = 'needs_review', review_reason = $2, waiting_for = NULL, waiting_since = NULL,
               updated_at = now()
        WHERE id = $1
        """

    // MARK: Merchant callbacks

    /// The merchant acknowledged `order.paid`: the order is fulfilled (also after its callback
    /// had failed and an operator replayed it). An overpayment reported meanwhile keeps its reason.
    package let markOrderFulfilled = """
        UPDATE orders SET fulfillment_status = 'fulfilled', fulfilled_at = now(),
               review_reason = CASE WHEN review_reason LIKE 'overpaid:%' THEN review_reason END, updated_at = now()
        WHERE id = $1 AND fulfillment_status IN ('pending', 'failed')
        """

    /// The merchant's endpoint is gone (410), or the last attempt failed: fulfillment failed
    /// and needs a person.
    package let markOrderFulfillmentFailed = """
        UPDATE orders SET fulfillment_status = 'failed', review_reason = $2, updated_at = now()
        WHERE id = $1 AND fulfillment_status = 'pending'
        """
}
