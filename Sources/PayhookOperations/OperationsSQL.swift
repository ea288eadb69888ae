import PayhookPostgres
import PayhookQueue

/// Every SQL statement the on-call operations run (dead letters, reprocessing, gauges; retention's
/// are in `RetentionSQL`), named, in one place.
///
/// Why one place: `SQLStatementCatalogTests` prepares each against the migrated schema, so a renamed
/// column fails a fast test instead of a 3 a.m. replay. Values are always `$n` binds; optional
/// filters are `$n IS NULL OR …` so one statement serves every combination.
package struct OperationsSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = OperationsSQL()

    package static let letterColumns = "id, source, source_id, provider, reason, error, status, created_at, resolved_at, resolved_by, note"

    package static let letterFilter = """
        WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR source = $2)
          AND ($3::text IS NULL OR provider = $3) AND ($4::timestamptz IS NULL OR created_at >= $4)
          AND ($5::text IS NULL OR strpos(lower(reason), lower($5)) > 0)
        """

    /// Newest first, for people; `$6` caps the count (NULL: all).
    let listLetters = "SELECT \(letterColumns) FROM dead_letters \(letterFilter) ORDER BY id DESC LIMIT $6"

    /// Oldest first, for `replay --all`: work goes back in the order it failed.
    let matchLetters = "SELECT \(letterColumns) FROM dead_letters \(letterFilter) ORDER BY id LIMIT $6"

    /// `$1` is an int8 array literal such as `{3,4}`.
    let selectLetters = "SELECT \(letterColumns) FROM dead_letters WHERE id = ANY($1::bigint[]) ORDER BY id"

    /// Serializes two operators (or a CLI and the admin API) acting on one letter.
    let lockLetter = "SELECT \(letterColumns) FROM dead_letters WHERE id = $1 FOR UPDATE"

    /// Only an open letter is resolved; `$2` is `replayed` or `discarded`.
    let resolveLetter = """
        UPDATE dead_letters SET status = $2, resolved_at = now(), resolved_by = $3, note = $4
        WHERE id = $1 AND status = 'open' RETURNING \(letterColumns)
        """

    // MARK: Opening and resolving letters (`DeadLetterStore`)

    /// The queue's letter insert (`JobDeadLetterSink`): reads the CTE `discarded_jobs` of the
    /// statement that discards; not a statement on its own.
    static let insertDiscardedJobLetters = """
        INSERT INTO dead_letters (source, source_id, provider, reason, error)
        SELECT 'job', id, provider, reason, error FROM discarded_jobs
        ON CONFLICT (source, source_id) WHERE status = 'open' DO NOTHING
        """

    /// The queue's statements that discard, as composed with this module's letter insert: listed
    /// here so that the statement catalog prepares them as production runs them.
    let jobFailHeld = JobFinishingSQL(deadLetters: DeadLetterStore.jobSink).failHeld
    let jobDiscardHeld = JobFinishingSQL(deadLetters: DeadLetterStore.jobSink).discardHeld
    let jobRescueExpired = JobFinishingSQL(deadLetters: DeadLetterStore.jobSink).rescueExpired

    /// $1 inbound event id, $2 provider, $3 reason, $4 error. An event with an open letter keeps it.
    let openInboundLetter = """
        INSERT INTO dead_letters (source, source_id, provider, reason, error)
        VALUES ('inbound_event', $1, $2, $3, $4)
        ON CONFLICT (source, source_id) WHERE status = 'open' DO NOTHING
        """

    /// $1 job ids (bigint array), $2 status (`replayed` or `discarded`), $3 actor, $4 note.
    let resolveJobLetters = """
        UPDATE dead_letters SET status = $2, resolved_at = now(), resolved_by = $3, note = $4
        WHERE source = 'job' AND source_id = ANY($1::bigint[]) AND status = 'open'
        RETURNING id
        """

    /// $1 job kind, $2 unique key, $3 status (`replayed` or `discarded`), $4 actor, $5 note.
    let resolveJobLettersByKey = """
        UPDATE dead_letters d SET status = $3, resolved_at = now(), resolved_by = $4, note = $5
        FROM jobs j
        WHERE j.kind = $1 AND j.unique_key = $2 AND d.source = 'job' AND d.source_id = j.id AND d.status = 'open'
        RETURNING d.id
        """

    let selectInboundEvent = """
        SELECT id, provider, account, dedup_key, event_type, received_at, remote_addr, headers::text AS headers, query,
               body, status, attempts, next_attempt_at, last_error, processed_at
        FROM inbound_events WHERE id = $1
        """

    let selectJob = """
        SELECT id, kind, payload::text AS payload, state, attempt, max_attempts, run_at, errors::text AS errors,
               created_at, finalized_at
        FROM jobs WHERE id = $1
        """

    /// Puts a dead inbound event back in the processors' queue: due now, attempts from zero,
    /// `last_error` kept as history. A pending row (already queued) is left due as it is.
    let requeueInboundEvent = """
        UPDATE inbound_events SET status = 'pending', attempts = 0, next_attempt_at = now()
        WHERE id = $1 AND status = 'dead' RETURNING id
        """

    /// Processed deliveries of one provider received at or after `$2`.
    let countReprocessable = """
        SELECT count(*) AS n, min(received_at) AS oldest, max(received_at) AS newest FROM inbound_events
        WHERE provider = $1 AND status = 'processed' AND received_at >= $2
        """

    /// One batch of `inbound reprocess`: small, so processors and ingress never wait long on it.
    /// $3 is when the run started (database clock): a row processed after it was set pending by
    /// this run and processed again already, so it is not set pending a second time.
    let reprocessBatch = """
        UPDATE inbound_events SET status = 'pending', attempts = 0, next_attempt_at = now(), processed_at = NULL
        WHERE id IN (SELECT id FROM inbound_events
                     WHERE provider = $1 AND status = 'processed' AND received_at >= $2 AND received_at <= $3
                       AND processed_at < $3
                     LIMIT $4)
        """

    /// The database's clock, which `processed_at` is written with.
    let databaseNow = "SELECT now() AS now"

    /// Everything the database-backed gauges need, in one round trip. Each part is served by a
    /// partial index (pending rows, open letters), so the cost follows the backlog, not the table.
    let gauges = """
        SELECT (SELECT count(*) FROM inbound_events WHERE status = 'pending') AS backlog,
               (SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8
                  FROM inbound_events WHERE status = 'pending') AS oldest_pending_seconds,
               (SELECT count(*) FROM dead_letters WHERE status = 'open' AND source = 'inbound_event') AS open_inbound,
               (SELECT count(*) FROM dead_letters WHERE status = 'open' AND source = 'job') AS open_job,
               -- Unfinished and discarded jobs by kind and state; succeeded rows only grow, so
               -- counting them every refresh would cost more as time passes and say little.
               (SELECT coalesce(jsonb_agg(jsonb_build_array(kind, state, n)), '[]')::text
                  FROM (SELECT kind, state, count(*) AS n FROM jobs
                        WHERE state IN ('available', 'running', 'retryable', 'discarded') GROUP BY kind, state) AS counts
               ) AS jobs
        """

    /// What a replay reads back to say where the work stands.
    let inboundEventStatus = "SELECT status FROM inbound_events WHERE id = $1"
    let jobState = "SELECT state FROM jobs WHERE id = $1"
}
