import Foundation
import PayhookCore
import PayhookPostgres
import Synchronization
import Testing
@testable import PayhookApp

@Suite("Inbound event writer against PostgreSQL")
struct InboundEventWriterTests {
    static func draft(_ provider: ProviderID, key: String, eventType: String?, body: [UInt8], received: Date,
                      account: String = "", headers: String = "{}", query: String = "", remote: String = "127.0.0.1") -> InboundEventDraft {
        InboundEventDraft(provider: provider, account: account, dedupKey: key, eventType: eventType, receivedAt: received,
                          remoteAddress: remote, headersJSON: headers, rawQuery: query, body: body)
    }

    /// Writes `drafts` (at most four) as one batch: queued before the writer starts, they are
    /// all taken by its first flush. Returns each draft's outcome, in order.
    static func storeAsOneBatch(_ drafts: [InboundEventDraft], pool: PostgresPool) async -> [InboundWriteOutcome?] {
        let outcomes = Outcomes()
        let writer = InboundEventWriter(pool: pool, logger: .silent, metrics: MetricsRegistry())
        for (index, draft) in drafts.enumerated() {
            writer.store(draft) { outcome in outcomes.record(index, outcome) }
        }
        writer.stop()
        await writer.run(writers: 1)
        return outcomes.all
    }

    @Test("one batch stores awkward values exactly, answers duplicates (also inside the batch), and keeps row order")
    func roundTrip() async throws {
        let database = try await TestDatabase.migrated("writer")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let received = Date(timeIntervalSince1970: 1_796_001_460.123456)
        let drafts = [
            Self.draft(.adyen, key: #"k"1\x,{}"#, eventType: nil, body: Array(#"{"a":"b\"c"}"#.utf8), received: received,
                       headers: #"{"content-type":"application/json","x-q":"a\"b\\c"}"#, query: "data.id=1&x=\"y\""),
            Self.draft(.pxp, key: "k2", eventType: "x,y", body: [], received: received.addingTimeInterval(0.000001),
                       account: "acme", remote: "::1"),
            Self.draft(.adyen, key: #"k"1\x,{}"#, eventType: "AUTHORISATION", body: [1, 2, 3], received: received),
            Self.draft(.mercadopago, key: "k2", eventType: "payment.updated", body: Array(0...255), received: received,
                       headers: #"{"é":"ü"}"#),
        ]
        let recorded = await Self.storeAsOneBatch(drafts, pool: pool)
        #expect(recorded.count == 4)
        guard case .stored(let first)? = recorded[0], case .stored(let second)? = recorded[1],
              case .duplicate? = recorded[2], case .stored(let fourth)? = recorded[3] else {
            Issue.record("unexpected outcomes \(recorded)")
            return
        }
        #expect(first < second && second < fourth)

        let rows = try await pool.query("""
            SELECT provider, account, dedup_key, event_type, received_at, remote_addr, headers::text AS headers, query, body,
                   (extract(epoch FROM received_at) * 1000000)::int8 AS micros
            FROM inbound_events ORDER BY id
            """)
        let stored = Array(rows)
        #expect(stored.count == 3)
        for (row, index) in zip(stored, [0, 1, 3]) {
            let draft = drafts[index]
            #expect(try row.decode("provider") as String == draft.provider.rawValue)
            #expect(try row.decode("account") as String == draft.account)
            #expect(try row.decode("dedup_key") as String == draft.dedupKey)
            #expect(try row.decode("event_type") as String? == draft.eventType)
            #expect(try row.decode("micros") as Int64 == Int64((draft.receivedAt.timeIntervalSince1970 * 1_000_000).rounded()))
            #expect(try row.decode("remote_addr") as String == draft.remoteAddress)
            #expect(try row.decode("query") as String == draft.rawQuery)
            #expect(try row.decode("body") as [UInt8] == draft.body)
        }
        #expect(try stored[0].decode("headers") as String == #"{"x-q": "a\"b\\c", "content-type": "application/json"}"#)
        await pool.close()
    }

    @Test("a batch of new deliveries answers each one with the id of its own row")
    func idsOfNewRows() async throws {
        let database = try await TestDatabase.migrated("writerids")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let received = Date(timeIntervalSince1970: 1_796_001_460)
        let drafts = [
            Self.draft(.pxp, key: "b", eventType: nil, body: [1], received: received),
            Self.draft(.adyen, key: "a", eventType: nil, body: [2], received: received),
            Self.draft(.mercadopago, key: "a", eventType: nil, body: [3], received: received),
            Self.draft(.adyen, key: "c", eventType: nil, body: [4], received: received),
        ]
        let recorded = await Self.storeAsOneBatch(drafts, pool: pool)

        let rows = try await pool.query("SELECT id, provider, dedup_key FROM inbound_events")
        var idOf: [String: Int64] = [:]
        for row in rows { idOf[try row.decode("provider") as String + "/" + (try row.decode("dedup_key") as String)] = try row.decode("id") }
        #expect(idOf.count == 4)
        for (index, outcome) in recorded.enumerated() {
            guard case .stored(let id)? = outcome else {
                Issue.record("delivery \(index) was answered \(String(describing: outcome))")
                continue
            }
            #expect(id == idOf[drafts[index].provider.rawValue + "/" + drafts[index].dedupKey])
        }
        await pool.close()
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
            return outcomes.all.prefix(keys.count).map { outcome in
                switch outcome {
                case .stored?: "stored"
                case .duplicate?: "duplicate"
                case .unavailable?: "unavailable"
                case nil: "unanswered"
                }
            }
        }
        func refused() -> UInt64 { metrics.counterValue(InboundEventWriter.refusedBatchesMetric) }

        #expect(await write(["a", "b"]) == ["stored", "stored"])
        #expect(refused() == 0)
        #expect(await write(["a", "c"]) == ["duplicate", "stored"])
        #expect(refused() == 1)
        // Duplicates are expected now: this batch goes straight to ON CONFLICT, nothing refused.
        #expect(await write(["c", "d"]) == ["duplicate", "stored"])
        #expect(refused() == 1)
        // It comes back whole, so the next batch is inserted plainly again, and refused.
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
