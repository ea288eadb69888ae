import PayhookPostgres

/// Every statement the queue runs, in one place, so a test can prepare each against the
/// migrated schema and a reader can see the whole protocol. The three that can discard a job
/// (and so open its dead letter) are in `JobFinishingSQL` below, composed with the queue's
/// `JobDeadLetterSink`.
///
/// Ownership rule shared by every completion statement: a row is changed only while it is
/// `running` under the same `locked_by` and `attempt` the worker claimed it with. A worker whose
/// lease expired and whose job was rescued and claimed again (by anyone, even itself) therefore
/// changes nothing; the statement returns no row and the caller learns it lost the claim.
///
/// Id lists are bound as text array literals (`{1,2,3}`) built from integers, never from input.
package struct JobSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = JobSQL()

    /// $1 kind, $2 payload jsonb, $3 unique_key or NULL, $4 run_at or NULL (now), $5 max_attempts,
    /// $6 channel. NOTIFY is transactional: it is sent on commit and dropped on rollback.
    let enqueue = """
        WITH inserted AS (
            INSERT INTO jobs (kind, payload, unique_key, run_at, max_attempts)
            VALUES ($1, $2, $3, coalesce($4::timestamptz, now()), $5)
            ON CONFLICT (unique_key) DO NOTHING
            RETURNING id, kind
        )
        SELECT id, pg_notify($6, kind)::text AS notified FROM inserted
        """

    /// $1 JSON array of {kind, payload (JSON as a string), unique_key, run_at (epoch seconds),
    /// max_attempts}, $2 default max_attempts, $3 channel. Duplicate keys inside the batch are
    /// skipped like existing ones.
    let enqueueMany = """
        WITH inserted AS (
            INSERT INTO jobs (kind, payload, unique_key, run_at, max_attempts)
            SELECT r.kind, r.payload::jsonb, r.unique_key, coalesce(to_timestamp(r.run_at), now()),
                   coalesce(r.max_attempts, $2::int)
            FROM jsonb_to_recordset($1::jsonb)
                 AS r(kind text, payload text, unique_key text, run_at double precision, max_attempts int)
            ON CONFLICT (unique_key) DO NOTHING
            RETURNING id, kind
        )
        SELECT id, pg_notify($3, kind)::text AS notified FROM inserted
        """

    /// $1 limit, $2 worker, $3 lease seconds, $4 kinds as a JSON array of strings.
    /// `= ANY (ARRAY(…))` rather than `IN (…)`: with `IN` the planner hash-joins the ids against
    /// a sequential scan of the whole table, which grows with every finished job; an array
    /// makes it a primary-key lookup.
    let claimDue = """
        UPDATE jobs
        SET state = 'running', attempt = attempt + 1, locked_by = $2,
            lease_expires_at = now() + make_interval(secs => $3)
        WHERE id = ANY (ARRAY(
            SELECT id FROM jobs
            WHERE state IN ('available', 'retryable') AND run_at <= now()
              AND kind IN (SELECT jsonb_array_elements_text($4::jsonb))
            ORDER BY run_at, id
            LIMIT $1
            FOR UPDATE SKIP LOCKED))
        RETURNING id, kind, payload::text AS payload, unique_key, attempt, max_attempts, run_at, created_at,
                  lease_expires_at
        """

    /// $1 ids, $2 attempts (parallel arrays), $3 worker.
    let completeHeld = """
        UPDATE jobs
        SET state = 'succeeded', finalized_at = now(), lease_expires_at = NULL
        FROM unnest($1::bigint[], $2::int[]) AS held(id, attempt)
        WHERE jobs.id = held.id AND jobs.attempt = held.attempt AND jobs.state = 'running' AND jobs.locked_by = $3
        RETURNING jobs.id
        """

    /// $1 ids, $2 attempts, $3 worker, $4 lease seconds.
    let extendHeldLeases = """
        UPDATE jobs
        SET lease_expires_at = now() + make_interval(secs => $4)
        FROM unnest($1::bigint[], $2::int[]) AS held(id, attempt)
        WHERE jobs.id = held.id AND jobs.attempt = held.attempt AND jobs.state = 'running' AND jobs.locked_by = $3
        RETURNING jobs.id
        """

    /// $1 ids, $2 attempts, $3 worker. Gives the attempt back: the job did not fail, its worker
    /// stopped.
    let releaseHeld = """
        UPDATE jobs
        SET state = 'available', attempt = jobs.attempt - 1, lease_expires_at = NULL, locked_by = NULL
        FROM unnest($1::bigint[], $2::int[]) AS held(id, attempt)
        WHERE jobs.id = held.id AND jobs.attempt = held.attempt AND jobs.state = 'running' AND jobs.locked_by = $3
        RETURNING jobs.id
        """

    /// $1 id, $2 attempt, $3 worker, $4 delay seconds.
    let snoozeHeld = """
        UPDATE jobs
        SET state = 'available', attempt = attempt - 1, run_at = now() + make_interval(secs => $4),
            lease_expires_at = NULL
        WHERE id = $1 AND attempt = $2 AND state = 'running' AND locked_by = $3
        RETURNING id
        """

    // MARK: Operations on jobs nobody holds

    /// $1 kind, $2 unique keys (text array). Waiting jobs (available or retryable, due later)
    /// become due now; due, running and finished jobs are left as they are.
    let wakeByKeys = """
        UPDATE jobs SET run_at = now()
        WHERE kind = $1 AND unique_key = ANY($2::text[]) AND state IN ('available', 'retryable') AND run_at > now()
        RETURNING id
        """

    /// $1 kind, $2 unique keys (text array), $3 states to take (text array; never `running` or
    /// `succeeded`, see `JobQueue.requeue(kind:uniqueKeys:from:on:)`). The jobs become available
    /// and due now; a discarded one gets its attempts back. `errors` is kept as history.
    let requeueByKeys = """
        UPDATE jobs
        SET state = 'available', run_at = now(), attempt = CASE WHEN state = 'discarded' THEN 0 ELSE attempt END,
            finalized_at = NULL, lease_expires_at = NULL, locked_by = NULL
        WHERE kind = $1 AND unique_key = ANY($2::text[]) AND state = ANY($3::text[])
        RETURNING id
        """

    /// $1 id. An operator's replay: a discarded or retryable job becomes available and due now,
    /// attempts from zero, `errors` kept as history. A running or succeeded job is never touched.
    let requeueByID = """
        UPDATE jobs SET state = 'available', attempt = 0, run_at = now(), lease_expires_at = NULL, locked_by = NULL,
               finalized_at = NULL
        WHERE id = $1 AND state IN ('discarded', 'retryable') RETURNING id
        """

    /// $1 cutoff, $2 limit. Retention's batch: succeeded and cancelled jobs finalized before the
    /// cutoff; discarded ones stay with their dead letters. Not an id window like retention's other
    /// tables: `finalized_at` does not follow the id (a job can retry for days), and the partial
    /// index `jobs_finished` holds only these rows, so a batch reads no others.
    let deleteFinished = """
        DELETE FROM jobs WHERE id IN (
            SELECT id FROM jobs WHERE state IN ('succeeded', 'cancelled') AND finalized_at < $1 LIMIT $2)
        """
}

/// The statements that can discard a job, each with the dead letter of what it discards in the
/// same statement, through the `JobDeadLetterSink` the queue was composed with. Same ownership
/// rule as `JobSQL`. Built once per `JobQueue`; `OperationsSQL` lists them as composed in
/// production, so the statement catalog prepares them.
package struct JobFinishingSQL: Sendable {
    /// $1 id, $2 attempt, $3 worker, $4 retry delay seconds, $5 error text.
    package let failHeld: String
    /// $1 id, $2 attempt, $3 worker, $4 error text, $5 the letter's reason (`DeadLetterReason`).
    package let discardHeld: String
    /// $1 limit. Jobs whose worker stopped renewing their lease go back to `retryable` (due at
    /// once: the worker failed, not necessarily the job), or are discarded with a dead letter when
    /// that was their last attempt. SKIP LOCKED lets any number of rescuers run side by side.
    package let rescueExpired: String

    package init(deadLetters: JobDeadLetterSink) {
        let exhausted = DeadLetterReason.maxAttemptsExceeded.rawValue
        let letter = deadLetters.insertForDiscardedJobs
        failHeld = """
            WITH failed AS (
                UPDATE jobs
                SET state = CASE WHEN attempt >= max_attempts THEN 'discarded' ELSE 'retryable' END,
                    run_at = CASE WHEN attempt >= max_attempts THEN run_at ELSE now() + make_interval(secs => $4) END,
                    finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
                    lease_expires_at = NULL,
                    errors = errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'error', $5::text))
                WHERE id = $1 AND attempt = $2 AND state = 'running' AND locked_by = $3
                RETURNING id, state, payload
            ), discarded_jobs (id, provider, reason, error) AS (
                SELECT id, payload->>'provider', '\(exhausted)'::text, $5::text FROM failed WHERE state = 'discarded'
            ), letter AS (
                \(letter)
            )
            SELECT id, state FROM failed
            """
        discardHeld = """
            WITH discarded AS (
                UPDATE jobs
                SET state = 'discarded', finalized_at = now(), lease_expires_at = NULL,
                    errors = errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'error', $4::text))
                WHERE id = $1 AND attempt = $2 AND state = 'running' AND locked_by = $3
                RETURNING id, payload
            ), discarded_jobs (id, provider, reason, error) AS (
                SELECT id, payload->>'provider', $5::text, $4::text FROM discarded
            ), letter AS (
                \(letter)
            )
            SELECT id FROM discarded
            """
        rescueExpired = """
            WITH rescued AS (
                UPDATE jobs
                SET state = CASE WHEN attempt >= max_attempts THEN 'discarded' ELSE 'retryable' END,
                    run_at = CASE WHEN attempt >= max_attempts THEN run_at ELSE now() END,
                    finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
                    lease_expires_at = NULL,
                    errors = errors || jsonb_build_array(jsonb_build_object(
                        'attempt', attempt, 'at', now(),
                        'error', 'lease expired: worker ' || coalesce(locked_by, '?') || ' stopped renewing it'))
                WHERE id = ANY (ARRAY(
                    SELECT id FROM jobs
                    WHERE state = 'running' AND lease_expires_at < now()
                    ORDER BY lease_expires_at
                    LIMIT $1
                    FOR UPDATE SKIP LOCKED))
                RETURNING id, state, payload, locked_by
            ), discarded_jobs (id, provider, reason, error) AS (
                SELECT id, payload->>'provider', '\(exhausted)'::text,
                       'lease expired: worker ' || coalesce(locked_by, '?') || ' stopped renewing it'
                FROM rescued WHERE state = 'discarded'
            ), letter AS (
                \(letter)
            )
            SELECT id, state FROM rescued
            """
    }
}
