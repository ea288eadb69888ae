import Foundation
package import PayhookPostgres
import Testing
package import PayhookTestSupport
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// Dead letters as the processor and the job queue leave them, written directly so that each
/// test states exactly what the operator finds.
extension TestDatabase {
    /// A dead inbound event and its open letter; returns (letter id, inbound event id).
    @discardableResult
    package func seedDeadInbound(provider: String = "pxp", reason: String = "max_attempts_exceeded",
                         error: String = "fetching pxp transaction failed: timeout: no answer",
                         body: [UInt8] = Array(#"{"eventCategory":"Transaction"}"#.utf8), attempts: Int64 = 8,
                         createdAgo seconds: Int64 = 0) async throws -> (letter: Int64, event: Int64) {
        let event: Int64 = try #require(try await query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, attempts, last_error, headers, query)
            VALUES ($1, $2, $3, 'dead', $4, $5, '{"content-type":"application/json"}', 'x=1') RETURNING id
            """, [.text(provider), .text(UUID().uuidString), .bytea(body), .int(attempts), .text(error)]).rows.first?.decode("id"))
        let letter: Int64 = try #require(try await query("""
            INSERT INTO dead_letters (source, source_id, provider, reason, error, created_at)
            VALUES ('inbound_event', $1, $2, $3, $4, now() - make_interval(secs => $5)) RETURNING id
            """, [.int(event), .text(provider), .text(reason), .text(error), .double(Double(seconds))]).rows.first?.decode("id"))
        return (letter, event)
    }

    /// A discarded job with an error history and its open letter; returns (letter id, job id).
    @discardableResult
    package func seedDeadJob(kind: String = "fulfill_order") async throws -> (letter: Int64, job: Int64) {
        let job: Int64 = try #require(try await query("""
            INSERT INTO jobs (kind, payload, state, attempt, max_attempts, errors, finalized_at)
            VALUES ($1, '{"order_id": 7}', 'discarded', 5, 5, '[{"attempt": 5, "error": "callback answered HTTP 500"}]', now())
            RETURNING id
            """, [.text(kind)]).rows.first?.decode("id"))
        let letter: Int64 = try #require(try await query("""
            INSERT INTO dead_letters (source, source_id, reason, error)
            VALUES ('job', $1, 'max_attempts_exceeded', 'callback answered HTTP 500') RETURNING id
            """, [.int(job)]).rows.first?.decode("id"))
        return (letter, job)
    }

    package func int(_ sql: String, _ binds: [PostgresValue] = []) async throws -> Int64 {
        try #require(try await query(sql, binds).rows.first?.decode("n", as: Int64.self))
    }

    package func string(_ sql: String, _ binds: [PostgresValue] = []) async throws -> String? {
        try await query(sql, binds).rows.first?.decode("v", as: String?.self)
    }

    /// The environment an operator's shell gives `payhook`.
    package var operatorEnvironment: [String: String] { ["DATABASE_URL": url, "USER": "oncall-test"] }
}
