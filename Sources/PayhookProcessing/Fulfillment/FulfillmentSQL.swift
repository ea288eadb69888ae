import PayhookPostgres

/// What the fulfillment path reads. Its writes of `orders` and `payments` (linking, follow-ups,
/// waiting, review) are `LedgerSQL`'s. Ids travel as arrays (`$n::bigint[]`) like the
/// processor's, so one prepared statement serves any batch size.
package struct FulfillmentSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = FulfillmentSQL()

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

    let selectCallbacks = """
        SELECT webhook_id, type, status, attempts, last_status_code, created_at, delivered_at
        FROM merchant_callbacks WHERE order_id = $1 ORDER BY id
        """
}
