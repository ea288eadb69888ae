import Foundation
import PayhookTestSupport
import PayhookPostgres
import PayhookQueue
import Testing
@testable import PayhookOperations

/// The one API that opens and resolves letters outside an operator's replay or discard, and the
/// sink through which the queue opens its own.
@Suite("Dead-letter store", .timeLimit(.minutes(5)))
struct DeadLetterStoreTests {
    private struct Letter: Equatable {
        let source: String
        let sourceID: Int64
        let provider: String?
        let reason: String
        let error: String?
        let status: String
        let resolvedBy: String?
        let note: String?
    }

    private func letters(_ database: TestDatabase) async throws -> [Letter] {
        try await database.query("""
            SELECT source, source_id, provider, reason, error, status, resolved_by, note FROM dead_letters ORDER BY id
            """).rows.map { row in
            Letter(source: try row.decode("source"), sourceID: try row.decode("source_id"), provider: try row.decode("provider"),
                   reason: try row.decode("reason"), error: try row.decode("error"), status: try row.decode("status"),
                   resolvedBy: try row.decode("resolved_by"), note: try row.decode("note"))
        }
    }

    @Test("an inbound event's letter opens once while it is open")
    func inboundLetter() async throws {
        let database = try await TestDatabase.migrated("dl_store_inbound")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        try await pool.transaction { connection in
            try await DeadLetterStore.openForInboundEvent(id: 41, provider: "adyen", reason: .notFoundAtProvider,
                                                          error: "payment not found at provider", on: connection)
            try await DeadLetterStore.openForInboundEvent(id: 41, provider: "adyen", reason: .payloadInvalid,
                                                          error: "again", on: connection)
        }
        #expect(try await letters(database) == [
            Letter(source: "inbound_event", sourceID: 41, provider: "adyen", reason: "not_found_at_provider",
                   error: "payment not found at provider", status: "open", resolvedBy: nil, note: nil),
        ])
    }

    @Test("a job discarded by a queue built here gets its letter in the discarding statement, and is resolved by id or by key")
    func jobLetters() async throws {
        let database = try await TestDatabase.migrated("dl_store_jobs")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 2)
        let queue = JobQueue(pool: pool)
        #expect(queue.deadLetters == DeadLetterStore.jobSink)
        let first = try #require(try await queue.enqueue(kind: "charge_recurring", payload: #"{"provider": "pxp"}"#, uniqueKey: "key-1"))
        let second = try #require(try await queue.enqueue(kind: "charge_recurring", uniqueKey: "key-2"))
        let jobs = try await queue.claim(limit: 2, kinds: ["charge_recurring"], worker: "w", lease: .seconds(30))
        for job in jobs { #expect(try await queue.record(.discard(.stillPending, message: "job \(job.id)"), for: job)) }
        #expect(try await letters(database).map(\.status) == ["open", "open"])
        #expect(try await letters(database).first { $0.sourceID == first }
            == Letter(source: "job", sourceID: first, provider: "pxp", reason: "still_pending", error: "still_pending: job \(first)",
                      status: "open", resolvedBy: nil, note: nil))

        let byID = try await pool.transaction { connection in
            try await DeadLetterStore.resolveJobLetters(jobIDs: [first], as: .replayed, by: "payhook", note: "re-checked", on: connection)
        }
        let byKey = try await pool.transaction { connection in
            try await DeadLetterStore.resolveJobLetter(kind: "charge_recurring", uniqueKey: "key-2", as: .discarded, by: "oncall",
                                                       note: "settled", on: connection)
        }
        let again = try await pool.transaction { connection in
            try await DeadLetterStore.resolveJobLetter(kind: "charge_recurring", uniqueKey: "key-2", as: .discarded, by: "oncall",
                                                       note: "twice", on: connection)
        }
        #expect(byID.count == 1 && byKey.count == 1 && again.isEmpty)
        let resolved = try await letters(database)
        #expect(resolved.first { $0.sourceID == first }.map { [$0.status, $0.resolvedBy, $0.note] } == ["replayed", "payhook", "re-checked"])
        #expect(resolved.first { $0.sourceID == second }.map { [$0.status, $0.resolvedBy, $0.note] } == ["discarded", "oncall", "settled"])
    }
}
