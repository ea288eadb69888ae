import Foundation
import PayhookAdmin
import PayhookOperations
import PayhookPostgres
import PayhookProcessing
import PayhookSubscriptions

/// The read operations the on-call console needs beyond those the CLI and JSON API already have
/// (`DeadLetterOperations`, `SubscriptionOperations`, `OrderService`): the overview figures, a
/// keyset page of dead letters, the audit trail of one target, and search with each hit's journey.
///
/// Reads only: the charts' hourly rollup of deliveries (`console_delivery_hours`) is written by
/// the maintenance ticker `ConsoleRollUp`, never by a page. Every change an operator makes goes
/// through the shared operations, so it is audited exactly as the CLI's and the API's are.
struct ConsoleReads: Sendable {
    let pool: PostgresPool

    /// Runs one statement and reads each of its rows with `read`. Every list read of the console
    /// is this shape; the failure becomes the `OperationsError` the pages know how to show.
    func rows<Row>(_ sql: String, _ binds: [PostgresValue] = [],
                   read: (PostgresRow) throws -> Row) async throws(OperationsError) -> [Row] {
        do {
            return try await pool.query(sql, binds).map(read)
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    struct Overview: Sendable {
        struct LetterGroup: Sendable {
            let reason: String; let provider: String; let source: String; let count: Int64; let oldest: Date

            /// A row of `ConsoleSQL.openLettersByReason`.
            init(row: PostgresRow) throws {
                reason = try row.decode("reason")
                provider = try row.decode("provider")
                source = try row.decode("source")
                count = try row.decode("n")
                oldest = try row.decode("oldest")
            }
        }
        struct Count: Sendable { let labels: [String]; let count: Int64 }

        let pending: Int64
        let oldestPending: Date?
        let openLetters: [LetterGroup]
        let jobs: [Count]
        let pastDue: Int64
    }

    func overview() async throws(OperationsError) -> Overview {
        do {
            return try await pool.withConnection { connection in
                let backlog = try await connection.query(ConsoleSQL.shared.backlog).rows.first
                let letters = try await connection.query(ConsoleSQL.shared.openLettersByReason).map(Overview.LetterGroup.init(row:))
                let jobs = try await connection.query(ConsoleSQL.shared.jobsByKindAndState).map { row in
                    Overview.Count(labels: [try row.decode("kind"), try row.decode("state")], count: try row.decode("n"))
                }
                let pastDue: Int64 = try await connection.query(ConsoleSQL.shared.pastDueCount).rows.first?.decode("n") ?? 0
                return Overview(pending: try backlog?.decode("pending") ?? 0, oldestPending: try backlog?.decode("oldest"),
                                openLetters: letters, jobs: jobs, pastDue: pastDue)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// The dead-letter list's filter: `DeadLetterFilter` plus an upper time bound.
    struct LetterQuery: Sendable, Equatable {
        var filter = DeadLetterFilter()
        /// Only letters created before this instant.
        var createdBefore: Date?

        fileprivate var binds: [PostgresValue] {
            [
                filter.status.map { .text($0.rawValue) } ?? .null, filter.source.map { .text($0.rawValue) } ?? .null,
                filter.provider.map { .text($0) } ?? .null, filter.createdSince.map { .timestamptz($0) } ?? .null,
                filter.reason.map { .text($0) } ?? .null, createdBefore.map { .timestamptz($0) } ?? .null,
            ]
        }
    }

    struct LetterPage: Sendable {
        let letters: [DeadLetter]
        /// The `before` of the next page; `nil` on the last one.
        let nextBefore: Int64?
        /// How many letters match the filter on every page.
        let total: Int64
    }

    /// Letters matching `query` with ids below `before`, newest first.
    func letterPage(_ query: LetterQuery, before: Int64?, size: Int) async throws(OperationsError) -> LetterPage {
        do {
            return try await pool.withConnection { connection in
                let rows = try await connection.query(
                    ConsoleSQL.shared.letterPage, query.binds + [before.map { .int($0) } ?? .null, .int(Int64(size + 1))])
                let letters = try rows.map { try DeadLetter(row: $0) }
                let total: Int64 = try await connection.query(ConsoleSQL.shared.letterCount, query.binds).rows.first?.decode("n") ?? 0
                let page = Array(letters.prefix(size))
                return LetterPage(letters: page, nextBefore: letters.count > size ? page.last?.id : nil, total: total)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// Open letters matching `query`, oldest first: a bulk replay's work list.
    func openLetterIDs(_ query: LetterQuery) async throws(OperationsError) -> [Int64] {
        try await rows(ConsoleSQL.shared.openLetterIDs, query.binds) { try $0.decode("id") }
    }

    struct AuditEntry: Sendable {
        let actor: String
        let action: String
        let detailsJSON: String
        let at: Date
    }

    /// What operators did to `target` (`dead_letter:7`), newest first.
    func audit(target: String) async throws(OperationsError) -> [AuditEntry] {
        try await rows(ConsoleSQL.shared.auditForTarget, [.text(target)]) { row in
            AuditEntry(actor: try row.decode("actor"), action: try row.decode("action"),
                       detailsJSON: try row.decode("details"), at: try row.decode("at"))
        }
    }

    /// Merchant callbacks about one subscription (`subscription.*`), oldest first.
    func subscriptionCallbacks(id: Int64) async throws(OperationsError) -> [OrderRecord.Callback] {
        try await rows(ConsoleSQL.shared.callbacksOfSubscription, [.int(id)], read: OrderRecord.Callback.init(row:))
    }
}
