import PayhookPostgres

/// Statements of the fulfillment path. Ids travel as JSON arrays (`$n::jsonb`) like the
/// processor's, so one prepared statement serves any batch size.
package struct FulfillmentSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = FulfillmentSQL()

    /// Payments just written (`$1`, a bigint array) that name no order but carry the merchant
    /// reference of a registered order of the same account (Adyen and PXP payments know only
    /// the reference; two accounts may both have an order `1001`).
    /// Returns the orders they now belong to.
    ///
    /// The batch's payments are found by primary key behind an `OFFSET 0` fence: with
    /// `order_id IS NULL` beside `id = ANY($1)`, the generic plan chose the `payments_order`
    /// index and read every payment without an order, 3.5 ms per batch of 100 after 20,000
    /// such payments and growing with them (bench/README.md, "Processing throughput").
    let linkPaymentsByReference = """
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
    let followUps = """
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
    let markOverpaid = """
        UPDATE orders SET review_reason = $2, updated_at = now() WHERE id = $1
        """

    /// Orders among `$1` (a bigint array) that processing just changed and whose `fulfill_order`
    /// job may be waiting on them: `pending` (the job waits for a missing fact, retried) or
    /// `needs_review` (the job was discarded into a dead letter). `FulfillmentTrigger` wakes the
    /// first and revives the second through the queue.
    let ordersAwaitingFulfillment = """
        SELECT id, fulfillment_status FROM orders
        WHERE id = ANY($1::bigint[]) AND fulfillment_status IN ('pending', 'needs_review')
        """

    /// An order by id, as `OrderRecord` reads it: the text `selectOrder` and `selectOrderForUpdate` share.
    private static let orderQuery = """
        SELECT id, provider, account, provider_order_id, merchant_reference, expected_amount_minor, expected_currency,
               amount_minor, currency, status, fulfillment_status, review_reason, callback_url, registered_at,
               fulfilled_at, waiting_for, waiting_since, created_at, updated_at
        FROM orders WHERE id = $1
        """

    let selectOrder = orderQuery
    let selectOrderForUpdate = orderQuery + " FOR UPDATE"

    /// The payments of order `$1` and of the provider orders linked to it by reference.
    let selectPayments = """
        SELECT id, provider_payment_id, merchant_reference, amount_minor, currency, refunded_minor, status,
               status_detail, method, funding, chargebacks, chargeback_reversals, updated_at, account, captured_minor,
               (SELECT coalesce(sum(a.amount_minor), 0)::bigint FROM payment_adjustments a
                WHERE a.payment_id = payments.id AND a.kind = 'refund' AND a.failed) AS refund_failed_minor
        FROM payments
        WHERE order_id = $1 OR order_id IN (SELECT id FROM orders WHERE merchant_order_id = $1)
        ORDER BY id
        """

    let selectProviderOrders = """
        SELECT id, provider_order_id, status FROM orders WHERE merchant_order_id = $1 ORDER BY id
        """

    /// Links the provider orders `$1` (a bigint array) that processing just wrote to the
    /// registered order of their provider, account and reference, and names for each the order
    /// fulfillment follows: the registered order it belongs to, or itself.
    /// (A data-modifying CTE's changes are invisible to the rest of its statement, so the
    /// mapping reads the new link from `linked`.)
    let linkProviderOrders = """
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

    let selectCallbacks = """
        SELECT webhook_id, type, status, attempts, last_status_code, created_at, delivered_at
        FROM merchant_callbacks WHERE order_id = $1 ORDER BY id
        """

    let markNeedsReview = """
        UPDATE orders SET fulfillment_status = 'needs_review', review_reason = $2, waiting_for = NULL, waiting_since = NULL,
               updated_at = now()
        WHERE id = $1
        """

    /// The check lacks a fact (`$2`): the order waits for it, since the first check that did.
    let markWaiting = """
        UPDATE orders SET waiting_for = $2, waiting_since = coalesce(waiting_since, now()), updated_at = now()
        WHERE id = $1
        """

    /// `order.paid` is queued: the order waits for the merchant's acknowledgement. An order in
    /// review whose re-check now matches leaves review.
    let markFulfillmentPending = """
        UPDATE orders SET fulfillment_status = 'pending', review_reason = NULL, waiting_for = NULL, waiting_since = NULL,
               updated_at = now()
        WHERE id = $1 AND fulfillment_status IN ('none', 'needs_review', 'pending')
        """
}
