package import PayhookPostgres
import Testing
package import PayhookTestSupport
@testable import PayhookIngress

/// A stored `inbound_events` row, as the tests look at it.
package struct InboundRow: Sendable {
    package let provider: String
    package let account: String
    package let dedupKey: String
    package let query: String
    package let body: [UInt8]
    package let status: String
    package let headers: String
}

/// A stored `rejected_deliveries` row.
package struct RejectedRow: Sendable {
    package let provider: String
    package let account: String
    package let reason: String
    package let bodySize: Int
    package let body: [UInt8]
}

extension TestDatabase {
    package func inboundRows(dedupKey: String) async throws -> [InboundRow] {
        try await Self.inboundRows(url: url, where: "dedup_key = $1", [.text(dedupKey)])
    }

    package static func inboundRows(url: String, where condition: String, _ binds: [PostgresValue]) async throws -> [InboundRow] {
        let connection = try await PostgresConnection.connect(url)
        defer { connection.close() }
        return try await connection.query(
            "SELECT provider, account, dedup_key, query, body, status, headers::text AS headers FROM inbound_events WHERE \(condition) ORDER BY id",
            binds
        ).map { row in
            InboundRow(
                provider: try row.decode("provider"), account: try row.decode("account"), dedupKey: try row.decode("dedup_key"),
                query: try row.decode("query"), body: try row.decode("body"), status: try row.decode("status"),
                headers: try row.decode("headers"))
        }
    }

    /// Inbound rows whose body is exactly `body` (for deliveries that must not be stored).
    package func inboundCount(body: [UInt8]) async throws -> Int {
        try await query("SELECT count(*) AS n FROM inbound_events WHERE body = $1", [.bytea(body)]).rows.first!.decode("n")
    }

    /// Rejected rows whose stored (possibly truncated) body is a prefix of `body`.
    package func rejectedRows(bodyPrefixOf body: [UInt8]) async throws -> [RejectedRow] {
        let prefix = Array(body.prefix(RejectedDeliveryRecorder.maxStoredBodyBytes))
        return try await query(
            "SELECT provider, account, reason, body_size, body FROM rejected_deliveries WHERE body = $1 ORDER BY id",
            [.bytea(prefix)]
        ).map { row in
            RejectedRow(
                provider: try row.decode("provider"), account: try row.decode("account"), reason: try row.decode("reason"),
                bodySize: try row.decode("body_size"), body: try row.decode("body"))
        }
    }
}
