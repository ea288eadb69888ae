import Foundation
import PayhookTestSupport
import PayhookCore
import PayhookPostgres
import Synchronization
import Testing
@testable import PayhookIngress

@Suite("Inbound event writer against PostgreSQL")
struct InboundEventWriterTests {
    static func draft(_ provider: ProviderID, key: String, eventType: String?, body: [UInt8], received: Date,
                      account: String = "", headers: String = "{}", query: String = "", remote: String = "127.0.0.1",
                      keyIndex: Int16 = 0) -> InboundEventDraft {
        InboundEventDraft(provider: provider, account: account, dedupKey: key, eventType: eventType, receivedAt: received,
                          remoteAddress: remote, headersJSON: headers, rawQuery: query, body: body, keyIndex: keyIndex)
    }

    /// Writes `drafts` (at most four) as one batch: queued before the writer starts, they are
    /// all taken by its first flush. Returns each draft's outcome, in order.
    static func storeAsOneBatch(_ drafts: [InboundEventDraft], pool: PostgresPool,
                                metrics: MetricsRegistry = MetricsRegistry()) async -> [InboundWriteOutcome?] {
        let outcomes = Outcomes()
        let writer = InboundEventWriter(pool: pool, logger: .silent, metrics: metrics, writers: 1)
        for (index, draft) in drafts.enumerated() {
            writer.store(draft) { outcome in outcomes.record(index, outcome) }
        }
        writer.stop()
        await writer.run()
        return outcomes.all
    }

    /// Deliveries with awkward values: quotes, backslashes, commas and braces, NULL, empty and
    /// binary bodies, non-ASCII headers, microsecond timestamps. No two share a dedup key.
    static func awkwardDrafts() -> [InboundEventDraft] {
        let received = Date(timeIntervalSince1970: 1_796_001_460.123456)
        return [
            Self.draft(.adyen, key: #"k"1\x,{}"#, eventType: nil, body: Array(#"{"a":"b\"c"}"#.utf8), received: received,
                       headers: #"{"content-type":"application/json","x-q":"a\"b\\c"}"#, query: "data.id=1&x=\"y\""),
            Self.draft(.pxp, key: "k2", eventType: "x,y", body: [], received: received.addingTimeInterval(0.000001),
                       account: "acme", remote: "::1"),
            Self.draft(.mercadopago, key: "k2", eventType: "payment.updated", body: Array(0...255), received: received,
                       headers: #"{"é":"ü"}"#),
        ]
    }

    /// Checks that `inbound_events` holds exactly `drafts`, in id order, value for value.
    static func expectStored(_ drafts: [InboundEventDraft], pool: PostgresPool) async throws {
        let rows = try await pool.query("""
            SELECT provider, account, dedup_key, event_type, received_at, remote_addr, headers::text AS headers, query, body,
                   (extract(epoch FROM received_at) * 1000000)::int8 AS micros
            FROM inbound_events ORDER BY id
            """)
        let stored = Array(rows)
        #expect(stored.count == drafts.count)
        for (row, draft) in zip(stored, drafts) {
            #expect(try row.decode("provider") as String == draft.provider.rawValue)
            #expect(try row.decode("account") as String == draft.account)
            #expect(try row.decode("dedup_key") as String == draft.dedupKey)
            #expect(try row.decode("event_type") as String? == draft.eventType)
            #expect(try row.decode("micros") as Int64 == Int64((draft.receivedAt.timeIntervalSince1970 * 1_000_000).rounded()))
            #expect(try row.decode("remote_addr") as String == draft.remoteAddress)
            #expect(try row.decode("query") as String == draft.rawQuery)
            #expect(try row.decode("body") as [UInt8] == draft.body)
        }
        #expect(try stored.first?.decode("headers") as String? == #"{"x-q": "a\"b\\c", "content-type": "application/json"}"#)
    }

    @Test("a batch of new deliveries is copied value for value, in batch order, and each is answered stored")
    func copiedBatch() async throws {
        let database = try await TestDatabase.migrated("writercopy")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let metrics = MetricsRegistry()
        let drafts = Self.awkwardDrafts()
        let recorded = await Self.storeAsOneBatch(drafts, pool: pool, metrics: metrics)
        #expect(recorded.prefix(3).map(Self.name) == ["stored", "stored", "stored"])
        #expect(metrics.counterValue(InboundEventWriter.refusedBatchesMetric) == 0)
        try await Self.expectStored(drafts, pool: pool)
        await pool.close()
    }

    @Test("a batch with a duplicate inside it stores the same values once each, and answers the repeat as a duplicate")
    func duplicateInsideBatch() async throws {
        let database = try await TestDatabase.migrated("writer")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        var drafts = Self.awkwardDrafts()
        drafts.insert(Self.draft(.adyen, key: drafts[0].dedupKey, eventType: "AUTHORISATION", body: [1, 2, 3],
                                 received: drafts[0].receivedAt), at: 2)
        let recorded = await Self.storeAsOneBatch(drafts, pool: pool)
        #expect(recorded.map(Self.name) == ["stored", "stored", "duplicate", "stored"])
        try await Self.expectStored([drafts[0], drafts[1], drafts[3]], pool: pool)
        await pool.close()
    }

    @Test("the duplicates a batch skipped are counted in their five-minute period with the batch, repeats inside it included")
    func duplicatesCounted() async throws {
        let database = try await TestDatabase.migrated("writerdupcount")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let received = Date(timeIntervalSince1970: 1_796_001_460)
        func draft(_ provider: ProviderID, _ key: String, account: String = "") -> InboundEventDraft {
            Self.draft(provider, key: key, eventType: nil, body: [1], received: received, account: account)
        }
        func counts() async throws -> [String] {
            try await pool.query("""
                SELECT provider, account, extract(epoch FROM period_start)::bigint AS period, duplicates
                FROM inbound_duplicate_periods ORDER BY provider, account
                """).map { row in
                "\(try row.decode("provider") as String)/\(try row.decode("account") as String)"
                    + " \(try row.decode("period") as Int64) \(try row.decode("duplicates") as Int64)"
            }
        }
        let first = await Self.storeAsOneBatch([draft(.adyen, "a"), draft(.pxp, "b", account: "acme")], pool: pool)
        #expect(first.prefix(2).map(Self.name) == ["stored", "stored"])
        #expect(try await counts().isEmpty, "a batch without duplicates writes no count")
        let second = await Self.storeAsOneBatch([draft(.adyen, "a"), draft(.adyen, "c"), draft(.adyen, "c"),
                                                 draft(.pxp, "b", account: "acme")], pool: pool)
        #expect(second.map(Self.name) == ["duplicate", "stored", "duplicate", "duplicate"])
        // 1_796_001_460 falls in the five minutes from 1_796_001_300.
        #expect(try await counts() == ["adyen/ 1796001300 2", "pxp/acme 1796001300 1"])
        #expect(await Self.storeAsOneBatch([draft(.adyen, "c")], pool: pool).prefix(1).map(Self.name) == ["duplicate"])
        #expect(try await counts() == ["adyen/ 1796001300 3", "pxp/acme 1796001300 1"], "a later batch adds to its period")
        await pool.close()
    }

    static func name(_ outcome: InboundWriteOutcome?) -> String {
        switch outcome {
        case .stored?: "stored"
        case .duplicate?: "duplicate"
        case .unavailable?: "unavailable"
        case nil: "unanswered"
        }
    }

    @Test("a batch the dedup constraint refuses is stored again skipping stored rows, and batches skip them until one has no duplicate")
    func refusedBatches() async throws {
        let database = try await TestDatabase.migrated("writerrefused")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let metrics = MetricsRegistry()
        let writer = InboundEventWriter(pool: pool, logger: .silent, metrics: metrics)
        let received = Date(timeIntervalSince1970: 1_796_001_460)
        // One batch of Adyen deliveries with these dedup keys; returns each one's outcome.
        func write(_ keys: [String]) async -> [String] {
            let outcomes = Outcomes()
            let batch = keys.enumerated().map { index, key in
                InboundEventWriter.Pending(draft: Self.draft(.adyen, key: key, eventType: nil, body: [1], received: received)) {
                    outcomes.record(index, $0)
                }
            }
            await writer.write(batch)
            return outcomes.all.prefix(keys.count).map(Self.name)
        }
        func refused() -> UInt64 { metrics.counterValue(InboundEventWriter.refusedBatchesMetric) }

        #expect(await write(["a", "b"]) == ["stored", "stored"])
        #expect(refused() == 0)
        #expect(await write(["a", "c"]) == ["duplicate", "stored"])
        #expect(refused() == 1)
        // Duplicates are expected now: this batch goes straight to ON CONFLICT, nothing refused.
        #expect(await write(["c", "d"]) == ["duplicate", "stored"])
        #expect(refused() == 1)
        // It comes back whole, so the next batch is copied again, and refused.
        #expect(await write(["e"]) == ["stored"])
        #expect(refused() == 1)
        #expect(await write(["f", "e"]) == ["stored", "duplicate"])
        #expect(refused() == 2)

        let keys = try await pool.query("SELECT dedup_key FROM inbound_events ORDER BY id").map { try $0.decode("dedup_key") as String }
        #expect(keys == ["a", "b", "c", "d", "e", "f"])
        await pool.close()
    }
}

/// Completions arrive on writer tasks; the test reads them after `run` returns.
private final class Outcomes: Sendable {
    private let state = Mutex<[Int: InboundWriteOutcome]>([:])
    func record(_ index: Int, _ outcome: InboundWriteOutcome) { state.withLock { $0[index] = outcome } }
    var all: [InboundWriteOutcome?] { state.withLock { state in (0..<4).map { state[$0] } } }
}
