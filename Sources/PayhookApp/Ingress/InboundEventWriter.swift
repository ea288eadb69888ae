import Foundation
import PayhookCore
import PayhookPostgres
import Synchronization

/// A verified delivery on its way into `inbound_events`.
struct InboundEventDraft: Sendable {
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
}

/// How the durable write of one delivery ended; the HTTP answer follows from it.
enum InboundWriteOutcome: Sendable {
    /// Committed as a new row.
    case stored(id: Int64)
    /// Already stored earlier (same provider and dedup key): acknowledged, stored once.
    case duplicate
    /// Not stored; the provider must retry (503).
    case unavailable
}

/// Appends verified deliveries to `inbound_events` with group commit.
///
/// Each `store` call queues the delivery; worker loops take everything queued and insert it with
/// one multi-row `INSERT … ON CONFLICT DO NOTHING` (one implicit transaction, one fsync), then
/// call every completion. A completion reporting `.stored` or `.duplicate` runs only after the
/// commit returned, which is the invariant that lets ingress answer 2xx.
final class InboundEventWriter: Sendable {
    typealias Completion = @Sendable (InboundWriteOutcome) -> Void

    struct Pending: Sendable {
        let draft: InboundEventDraft
        let completion: Completion
    }

    private let pool: PostgresPool
    private let logger: Logger
    private let batchRows: MetricsRegistry.Histogram
    private let queue: GroupCommitQueue<Pending>
    /// After a connection failure, batches fail fast until this instant instead of each waiting
    /// for a connect timeout: the provider gets its 503 at once and retries later.
    private let unavailableUntil = Mutex<ContinuousClock.Instant?>(nil)

    /// At most this many rows in one INSERT (9 binds each, well under PostgreSQL's 65,535).
    static let maxBatch = 500

    init(pool: PostgresPool, logger: Logger, metrics: MetricsRegistry, capacity: Int = 20_000) {
        self.pool = pool
        self.logger = logger
        metrics.describe("payhook_ingest_batch_rows", type: "histogram", help: "Deliveries per group-committed INSERT.",
                         buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 500])
        self.batchRows = metrics.histogram("payhook_ingest_batch_rows")
        let box = WriterBox()
        self.queue = GroupCommitQueue(maxBatch: Self.maxBatch, capacity: capacity) { batch in
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
    var queueDepth: Int { queue.depth }

    /// Runs `count` concurrent writer loops until `stop()`; each uses its own pooled connection.
    func run(writers count: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { await self.queue.runWorker() } }
        }
    }

    /// Stops taking deliveries; queued ones are still written before `run` returns.
    func stop() { queue.stop() }

    /// The INSERT text for a batch of `rows` deliveries, built once per batch size.
    private static let insertStatements = Mutex<[Int: String]>([:])

    static func insertSQL(rows: Int) -> String {
        if let cached = insertStatements.withLock({ $0[rows] }) { return cached }
        var sql = "INSERT INTO inbound_events (provider, account, dedup_key, event_type, received_at, remote_addr, headers, query, body) VALUES "
        for row in 0..<rows {
            let base = row * 9
            if row > 0 { sql += "," }
            sql += "(" + (1...9).map { "$\(base + $0)" }.joined(separator: ",") + ")"
        }
        sql += " ON CONFLICT (provider, dedup_key) DO NOTHING RETURNING id, provider, dedup_key"
        insertStatements.withLock { $0[rows] = sql }
        return sql
    }

    private func write(_ batch: [Pending]) async {
        if let until = unavailableUntil.withLock({ $0 }), ContinuousClock.now < until {
            for pending in batch { pending.completion(.unavailable) }
            return
        }
        batchRows.observe(Double(batch.count))
        let sql = Self.insertSQL(rows: batch.count)
        var binds: [PostgresValue] = []
        binds.reserveCapacity(batch.count * 9)
        for pending in batch {
            let draft = pending.draft
            binds.append(.text(draft.provider.rawValue))
            binds.append(.text(draft.account))
            binds.append(.text(draft.dedupKey))
            binds.append(draft.eventType.map(PostgresValue.text) ?? .null)
            binds.append(.timestamptz(draft.receivedAt))
            binds.append(.text(draft.remoteAddress))
            binds.append(.jsonb(draft.headersJSON))
            binds.append(.text(draft.rawQuery))
            binds.append(.bytea(draft.body))
        }

        do {
            let rows = try await pool.query(sql, binds)
            var inserted: [String: Int64] = [:]
            for row in rows {
                let provider: String = try row.decode("provider")
                let key: String = try row.decode("dedup_key")
                inserted[provider + "\u{0}" + key] = try row.decode("id")
            }
            for pending in batch {
                let draft = pending.draft
                if let id = inserted.removeValue(forKey: draft.provider.rawValue + "\u{0}" + draft.dedupKey) {
                    pending.completion(.stored(id: id))
                } else {
                    pending.completion(.duplicate)
                }
            }
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
}

/// Breaks the init-time cycle between the writer and its queue's flush closure.
/// Safe as `@unchecked Sendable`: `writer` is set once in `InboundEventWriter.init`, before the
/// queue can run any flush, and only read afterwards.
private final class WriterBox: @unchecked Sendable {
    weak var writer: InboundEventWriter?
}
