import PayhookPostgres

/// The statements retention runs, one per table it prunes, except `jobs`: the queue owns that
/// table and deletes its finished rows itself (`JobQueue.deleteFinished(before:limit:on:)`).
///
/// Append-only tables (`inbound_events`, `payment_events`, `rejected_deliveries`) are walked in
/// id order, one window of `$3` rows at a time, starting after the last id the previous window
/// reached (`$1`). Why a window rather than "any `$3` rows older than the cutoff": the planner
/// ran that form as a sequential scan from the table's first page, so the batch that finds
/// fewer than `$3` rows, which ends every sweep, and is the whole of a sweep with nothing due,
/// read every retained row. A sweep runs every interval in every process; the window form stops
/// after one window past the cutoff (figures in bench/README.md, Retention).
///
/// Rows arrive in time order, so ids follow their timestamps closely but not exactly (several
/// ingress processes, each with its own clock, write `received_at`). The sweeper stops at the
/// first window whose every row is younger than the cutoff (`young = scanned`); an old row that
/// lies beyond it is deleted by a later sweep, once the rows around it have aged too.
///
/// Every condition that decides a deletion is on the deleted table's own row, not the window's
/// copy, so PostgreSQL re-checks it if another transaction changed that row meanwhile (a
/// delivery put back to `pending` by `inbound reprocess` is not deleted). Two sweepers on one
/// window delete each row once: the second waits for the first's row lock and then finds the row
/// gone.
package struct RetentionSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = RetentionSQL()

    /// Processed deliveries received before `$2`. A delivery with a dead letter (any status) stays
    /// for `dead-letters show`; pending and dead ones stay for processing and the on-call.
    let deleteProcessedInbound = Self.windowDelete(table: "inbound_events", timeColumn: "received_at", condition: """
        AND t.status = 'processed'
              AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.source = 'inbound_event' AND d.source_id = t.id)
        """)

    /// Canonical history recorded before `$2`. Nothing reads it to decide anything (current state
    /// lives in `payments`, `orders`, `vault_tokens` and `payment_adjustments`), and nothing
    /// references it.
    let deletePaymentEvents = Self.windowDelete(table: "payment_events", timeColumn: "recorded_at", condition: "")

    /// Refused deliveries received before `$2`.
    let deleteRejectedDeliveries = Self.windowDelete(table: "rejected_deliveries", timeColumn: "received_at", condition: "")

    /// One window of `table`: deletes its rows whose `timeColumn` is before `$2` and that meet
    /// `condition` (on alias `t`), and reports `deleted`, the window's `last_id` (NULL when it was
    /// empty), how many rows it `scanned` and how many of them were `young`.
    private static func windowDelete(table: String, timeColumn: String, condition: String) -> String {
        """
        WITH scanned AS (
            SELECT id, \(timeColumn) AS at FROM \(table) WHERE id > $1 ORDER BY id LIMIT $3
        ), deleted AS (
            DELETE FROM \(table) t USING scanned s
            WHERE t.id = s.id AND t.\(timeColumn) < $2 \(condition)
            RETURNING t.id
        )
        SELECT (SELECT count(*) FROM deleted) AS deleted,
               (SELECT max(id) FROM scanned) AS last_id,
               (SELECT count(*) FROM scanned) AS scanned,
               (SELECT count(*) FROM scanned WHERE at >= $2) AS young
        """
    }
}
