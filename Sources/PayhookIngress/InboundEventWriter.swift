import Foundation
package import PayhookCore
package import PayhookPostgres
import Synchronization

/// A verified delivery on its way into `inbound_events`.
package struct InboundEventDraft: Sendable {
    let provider: ProviderID
    let account: String
    let dedupKey: String
    let eventType: String?
    let receivedAt: Date
    let remoteAddress: String
    /// JSON object text of the headers worth keeping (signature inputs, never credentials).
    let headersJSON: String
    let rawQuery: String
    let body: [UInt8]
    /// Which key of the ring verified it: 0 the current one, higher a previous one still accepted.
    let keyIndex: Int16
}

/// How the durable write of one delivery ended; the HTTP answer follows from it.
package enum InboundWriteOutcome: Sendable {
    /// Committed as a new row.
    case stored
    /// Already stored earlier (same provider and dedup key): acknowledged, stored once.
    case duplicate
    /// Not stored; the provider must retry (503).
    case unavailable
}

/// Appends verified deliveries to `inbound_events` with group commit.
///
/// Each `store` call queues the delivery; worker loops take everything queued and store it with
/// one binary `COPY … FROM STDIN` (one implicit transaction, one fsync), then call every
/// completion. A completion reporting `.stored` or `.duplicate` runs only after the commit
/// returned, which is the invariant that lets ingress answer 2xx.
///
/// Duplicates are rare (a provider retrying a delivery whose answer it missed), so a batch is
/// first copied as it is; only when the dedup constraint refuses it (the COPY then stores
/// nothing) is it inserted again with `INSERT … ON CONFLICT DO NOTHING`, which stores the new
/// rows and skips the stored ones. Why COPY first: the server reads each row straight into the
/// table, with no statement to plan and no array binds to decode (`PostgresCopyRows` has the
/// figures); and `ON CONFLICT` on every batch would probe the dedup index once more per row and
/// take a speculative-insertion lock for each. After a refused batch the writer stays on
/// `ON CONFLICT` until a batch has no duplicate, so a burst of retries costs one statement per
/// batch, not two.
package final class InboundEventWriter: Service {
    package typealias Completion = @Sendable (InboundWriteOutcome) -> Void

    package struct Pending: Sendable {
        let draft: InboundEventDraft
        let completion: Completion
    }

    private let pool: PostgresPool
    private let logger: Logger
    private let batchRows: MetricsRegistry.Histogram
    private let refusedBatches: MetricsRegistry.Counter
    private let queue: GroupCommitQueue<Pending>
    /// After a connection failure, batches fail fast until this instant instead of each waiting
    /// for a connect timeout: the provider gets its 503 at once and retries later.
    private let unavailableUntil = Mutex<ContinuousClock.Instant?>(nil)
    /// Set when a batch held a duplicate: batches then go straight to `InboundEventSQL.insertSkippingDuplicates`.
    private let expectDuplicates = Atomic<Bool>(false)

    /// At most this many rows in one batch (one COPY or INSERT).
    static let maxBatch = 500

    /// Rows that must wait before a second batch starts beside a running one. Each batch has a
    /// fixed cost on both sides (round trips, a statement, a commit); measured on bench/ingest
    /// (with the INSERT writer) against 1 (flush on any arrival), 64 cut CPU per delivery by ~9%
    /// in payhook and ~10% in PostgreSQL without lowering throughput. Below it, rows wait for the
    /// running batch, as they would with a single writer.
    static let minConcurrentBatch = 64

    /// Writer loops `run()` starts.
    let writerCount: Int

    /// - Parameter writers: concurrent writer loops; two keep one batch committing while the
    ///   next one fills.
    package init(pool: PostgresPool, logger: Logger, metrics: MetricsRegistry, capacity: Int = 20_000, writers: Int = 2) {
        self.pool = pool
        self.writerCount = max(1, writers)
        self.logger = logger
        metrics.describe("payhook_ingest_batch_rows", type: "histogram", help: "Deliveries per group-committed batch.",
                         buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 500])
        self.batchRows = metrics.histogram("payhook_ingest_batch_rows")
        metrics.describe(Self.refusedBatchesMetric, type: "counter",
                         help: "Group-committed batches refused by the dedup constraint and stored again skipping stored deliveries.")
        self.refusedBatches = metrics.counter(Self.refusedBatchesMetric)
        let box = WriterBox()
        self.queue = GroupCommitQueue(maxBatch: Self.maxBatch, capacity: capacity, minConcurrentBatch: Self.minConcurrentBatch) { batch in
            await box.writer?.write(batch)
        }
        box.writer = self
    }

    /// Queues one delivery. The completion is called exactly once, from a writer task.
    func store(_ draft: InboundEventDraft, completion: @escaping Completion) {
        if !queue.submit(Pending(draft: draft, completion: completion)) {
            completion(.unavailable)
        }
    }

    /// Deliveries waiting for the next commit.
    package var queueDepth: Int { queue.depth }

    /// Runs the writer loops until `stop()`; each uses its own pooled connection
    /// and runs on a thread of its own (a `DedicatedThreadExecutor`), where it blocks in libpq.
    ///
    /// Why a thread each: on the shared pool every batch crossed threads five times (the
    /// submit woke a cooperative thread, the connection's health check and the COPY each went
    /// to a dispatch thread and back), a futex wake-up and a context switch each; deliveries
    /// that arrive paced make batches of one or two rows, so that was paid per delivery. On its
    /// own thread a writer is woken once per batch and runs libpq inline
    /// (docs/decisions/0009-ingress-event-loop-and-writer-threads.md).
    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<writerCount {
                let executor = DedicatedThreadExecutor(name: "ingest-writer-\(index)")
                group.addTask(executorPreference: executor) {
                    await self.queue.runWorker()
                    executor.shutdown()
                }
            }
        }
    }

    /// Stops taking deliveries; queued ones are still written before `run` returns.
    package func stop() { queue.stop() }

    package var serviceName: String { "ingress writer" }

    /// The constraint whose refusal sends a batch to `InboundEventSQL.insertSkippingDuplicates`.
    static let dedupConstraint = "inbound_events_dedup"
    /// Counts batches that constraint refused: each cost a second statement.
    static let refusedBatchesMetric = "payhook_ingest_refused_batches_total"

    /// The rows of `InboundEventSQL.copy` for `batch`, in batch order.
    /// - Throws: `.other` if a text value holds NUL (verification never lets one through).
    static func copyRows(_ batch: [Pending]) throws(PostgresError) -> PostgresCopyRows {
        // Fields are read in place: iterating the drafts by value copied every one of them
        // (a retain and release per field), which showed in the ingest profile.
        var bytes = 0
        for index in batch.indices {
            // 140: the fixed-size fields, the short texts and the framing, generously.
            bytes += 140 + batch[index].draft.dedupKey.utf8.count + batch[index].draft.headersJSON.utf8.count
                + batch[index].draft.rawQuery.utf8.count + batch[index].draft.body.count
        }
        var rows = PostgresCopyRows(columns: 10, capacity: bytes)
        for index in batch.indices {
            try rows.startRow()
            try rows.appendText(batch[index].draft.provider.rawValue)
            try rows.appendText(batch[index].draft.account)
            try rows.appendText(batch[index].draft.dedupKey)
            try rows.appendText(batch[index].draft.eventType)
            try rows.appendTimestamp(batch[index].draft.receivedAt)
            try rows.appendText(batch[index].draft.remoteAddress)
            try rows.appendJSONB(batch[index].draft.headersJSON)
            try rows.appendText(batch[index].draft.rawQuery)
            try rows.appendBytes(batch[index].draft.body)
            try rows.appendSmallInt(batch[index].draft.keyIndex)
        }
        return rows
    }

    /// The binds of `InboundEventSQL.insertSkippingDuplicates` for `batch`, in row order: binary arrays, so no element is
    /// escaped here or scanned by the server.
    ///
    /// Reads each row's fields in place: iterating the drafts by value copied every one of
    /// them (a retain and release per field), which showed in the ingest profile.
    /// - Throws: `.other` if a text value holds NUL (verification never lets one through).
    static func insertBinds(_ batch: [Pending]) throws(PostgresError) -> [PostgresValue] {
        let rows = batch.count
        var providers = PostgresArray(.text, capacity: rows * 16)
        var accounts = PostgresArray(.text, capacity: rows * 4)
        var dedupKeys = PostgresArray(.text, capacity: rows * 48)
        var eventTypes = PostgresArray(.text, capacity: rows * 24)
        var receivedAts = PostgresArray(.timestamptz, capacity: rows * 12)
        var remoteAddresses = PostgresArray(.text, capacity: rows * 16)
        var headers = PostgresArray(.jsonb, capacity: rows * 200)
        var queries = PostgresArray(.text, capacity: rows * 40)
        var bodyStarts = PostgresArray(.int4, capacity: rows * 8)
        var bodyLengths = PostgresArray(.int4, capacity: rows * 8)
        var keyIndexes = PostgresArray(.int4, capacity: rows * 8)
        var bodies: [UInt8] = []
        var bodyBytes = 0
        for index in batch.indices { bodyBytes += batch[index].draft.body.count }
        bodies.reserveCapacity(bodyBytes)
        for index in batch.indices {
            try providers.append(batch[index].draft.provider.rawValue)
            try accounts.append(batch[index].draft.account)
            try dedupKeys.append(batch[index].draft.dedupKey)
            try eventTypes.append(batch[index].draft.eventType)
            try receivedAts.append(batch[index].draft.receivedAt)
            try remoteAddresses.append(batch[index].draft.remoteAddress)
            try headers.append(batch[index].draft.headersJSON)
            try queries.append(batch[index].draft.rawQuery)
            try bodyStarts.append(Int64(bodies.count + 1))  // substring() counts from 1
            try bodyLengths.append(Int64(batch[index].draft.body.count))
            try keyIndexes.append(Int64(batch[index].draft.keyIndex))
            bodies.append(contentsOf: batch[index].draft.body)
        }
        return [
            .array(providers), .array(accounts), .array(dedupKeys), .array(eventTypes), .array(receivedAts),
            .array(remoteAddresses), .array(headers), .array(queries), .bytea(bodies), .array(bodyStarts), .array(bodyLengths),
            .array(keyIndexes),
        ]
    }

    /// Stores one batch and answers each of its deliveries (internal so that tests can write
    /// batches of a known make-up one after another).
    func write(_ batch: [Pending]) async {
        if let until = unavailableUntil.withLock({ $0 }), ContinuousClock.now < until {
            for pending in batch { pending.completion(.unavailable) }
            return
        }
        batchRows.observe(Double(batch.count))
        do {
            // Every outcome is known before any delivery is answered: a decoding error must not
            // leave part of the batch answered when the rows are retried one by one below.
            let outcomes = try await store(batch)
            for index in batch.indices { batch[index].completion(outcomes[index]) }
        } catch {
            let kind = error.kind
            if kind == .connectionFailed || kind == .connectionLost || kind == .poolTimeout {
                unavailableUntil.withLock { $0 = ContinuousClock.now.advanced(by: .milliseconds(250)) }
            } else if batch.count > 1 {
                // Not the database's availability but something in the rows: write them one
                // by one, so a single bad row cannot turn its whole batch into 503s.
                logger.warning("ingest batch refused; retrying its rows one by one", [
                    "error": .string(String(describing: error)), "batch.size": .init(batch.count),
                ])
                for pending in batch { await write([pending]) }
                return
            }
            logger.error("inbound events not stored; answering 503", [
                "error": .string(String(describing: error)), "batch.size": .init(batch.count),
            ])
            for pending in batch { pending.completion(.unavailable) }
        }
    }

    /// Stores one batch's rows: copied as they are while duplicates are not expected, inserted
    /// skipping stored rows once the dedup constraint has refused a batch, until a batch comes
    /// back whole. Returns each delivery's outcome, in batch order.
    private func store(_ batch: [Pending]) async throws(PostgresError) -> [InboundWriteOutcome] {
        if !expectDuplicates.load(ordering: .relaxed) {
            do throws(PostgresError) {
                let stored = try await pool.copy(InboundEventSQL.copy, Self.copyRows(batch))
                // COPY stores every row or none, so this cannot differ; if it ever did, answering
                // 503 is the safe side: a stored delivery's retry is answered as a duplicate.
                guard stored == batch.count else {
                    throw PostgresError(kind: .other, message: "COPY reported \(stored) rows stored of a batch of \(batch.count)")
                }
                return Array(repeating: .stored, count: batch.count)
            } catch where error.kind == .uniqueViolation && error.constraint == Self.dedupConstraint {
                // The refused COPY stored nothing; the INSERT below stores the new rows.
                refusedBatches.increment()
                expectDuplicates.store(true, ordering: .relaxed)
            }
        }
        let rows = try await pool.query(InboundEventSQL.shared.insertSkippingDuplicates, Self.insertBinds(batch))
        if rows.rows.count == batch.count { expectDuplicates.store(false, ordering: .relaxed) }
        return try Self.outcomes(of: batch, returned: rows)
    }
}

extension InboundEventWriter {
    /// Each delivery's outcome, in batch order, from the INSERT's `RETURNING` rows: stored
    /// when its row came back, otherwise already stored. Rows are matched by provider and dedup
    /// key; within a batch, the first of two equal deliveries is the one stored.
    static func outcomes(of batch: [Pending], returned rows: PostgresRows) throws(PostgresError) -> [InboundWriteOutcome] {
        var inserted = Set<StoredIdentity>(minimumCapacity: rows.rows.count)
        for row in rows {
            inserted.insert(StoredIdentity(provider: try row.decode("provider"), dedupKey: try row.decode("dedup_key")))
        }
        return batch.indices.map { index in
            let identity = StoredIdentity(provider: batch[index].draft.provider.rawValue, dedupKey: batch[index].draft.dedupKey)
            return inserted.remove(identity) != nil ? .stored : .duplicate
        }
    }
}

/// What `UNIQUE (provider, dedup_key)` compares, as a set element without concatenating.
private struct StoredIdentity: Hashable {
    let provider: String
    let dedupKey: String
}

/// Breaks the init-time cycle between the writer and its queue's flush closure.
/// Safe as `@unchecked Sendable`: `writer` is set once in `InboundEventWriter.init`, before the
/// queue can run any flush, and only read afterwards.
private final class WriterBox: @unchecked Sendable {
    weak var writer: InboundEventWriter?
}

/// The statements that store verified deliveries in `inbound_events`.
package struct InboundEventSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = InboundEventSQL()

    /// What every batch tries first: its rows in `InboundEventWriter.copyRows(_:)`'s column order.
    /// A `static`, not a statement of the set: PREPARE cannot take COPY; every ingest test runs it.
    static let copy = "COPY inbound_events (\(columns)) FROM STDIN (FORMAT binary)"

    /// The statement for a batch that holds (or may hold) deliveries stored before: those rows
    /// are skipped, and `RETURNING` lists only the new ones, which is what
    /// `InboundEventWriter.outcomes(of:returned:)` reads. Each column arrives as one array (bodies as one `bytea`
    /// sliced by offset and length), so a batch costs 12 binds rather than 10 per row, and the
    /// server prepares and plans one statement instead of one per batch size seen. Arrays travel
    /// in binary form (see `PostgresArray`), `received_at` as the exact microsecond PostgreSQL stores.
    ///
    /// The same statement counts the rows it skipped in `inbound_duplicate_periods` (five-minute
    /// periods of `received_at`, migration 0025), so the count commits with the batch and costs no
    /// round trip; only this path can meet a duplicate, since a COPY with one is refused whole.
    /// A skipped row is one whose identity came back in no `RETURNING` row, or the second of two
    /// equal deliveries within the batch (the first is the one stored, as `outcomes` reads it).
    /// Counter rows are upserted in key order, so two writers' batches lock them in one order.
    let insertSkippingDuplicates = """
        WITH r AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::jsonb[],
                                 $8::text[], $10::int4[], $11::int4[], $12::int4[]) WITH ORDINALITY
                 AS r(provider, account, dedup_key, event_type, received_at, remote_addr, headers, query,
                      body_start, body_length, key_index, position)
        ), stored AS (
            INSERT INTO inbound_events (\(columns))
            SELECT r.provider, r.account, r.dedup_key, r.event_type, r.received_at,
                   r.remote_addr, r.headers, r.query, substring($9::bytea FROM r.body_start FOR r.body_length),
                   r.key_index::smallint
            FROM r
            ON CONFLICT (provider, dedup_key) DO NOTHING
            RETURNING provider, dedup_key
        ), skipped AS (
            SELECT r.provider, r.account, r.received_at,
                   row_number() OVER (PARTITION BY r.provider, r.dedup_key ORDER BY r.position) AS nth,
                   EXISTS (SELECT 1 FROM stored s WHERE s.provider = r.provider AND s.dedup_key = r.dedup_key) AS was_stored
            FROM r
        ), counted AS (
            INSERT INTO inbound_duplicate_periods AS d (period_start, provider, account, duplicates)
            SELECT date_bin('5 minutes', received_at, '2000-01-01 00:00:00+00'), provider, account, count(*)
            FROM skipped WHERE nth > 1 OR NOT was_stored
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (period_start, provider, account) DO UPDATE SET duplicates = d.duplicates + excluded.duplicates
        )
        SELECT provider, dedup_key FROM stored
        """

    /// The columns both statements fill, in the order `InboundEventWriter.copyRows(_:)` and `InboundEventWriter.insertBinds(_:)` give them.
    private static let columns = "provider, account, dedup_key, event_type, received_at, remote_addr, headers, query, body, key_index"
}
