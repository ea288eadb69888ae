import Foundation
package import PayhookPostgres
package import PayhookAdmin
import PayhookQueue

/// Finds, reads, replays and discards dead letters: the one implementation behind both
/// `payhook dead-letters` and the admin API's `/v1/dead-letters`.
///
/// Each replay or discard is one transaction that locks the letter, changes the work it points
/// at, resolves the letter and writes its `audit_log` row, so the log never disagrees with the
/// tables. Acting on a letter that is no longer open writes nothing: replay is idempotent.
/// Replaying is safe because processing is idempotent (a replayed delivery whose effects were
/// applied changes nothing twice).
package struct DeadLetterOperations: Sendable {
    package init(pool: PostgresPool) {
        self.pool = pool
    }

    let pool: PostgresPool

    /// Letters matching `filter`, newest first.
    /// - Throws: `OperationsError.databaseUnavailable`.
    package func list(_ filter: DeadLetterFilter) async throws(OperationsError) -> [DeadLetter] {
        try await letters(OperationsSQL.shared.listLetters, filter)
    }

    /// Letters matching `filter`, oldest first, for `replay --all`.
    package func matching(_ filter: DeadLetterFilter) async throws(OperationsError) -> [DeadLetter] {
        try await letters(OperationsSQL.shared.matchLetters, filter)
    }

    private func letters(_ sql: String, _ filter: DeadLetterFilter) async throws(OperationsError) -> [DeadLetter] {
        let binds: [PostgresValue] = [
            filter.status.map { .text($0.rawValue) } ?? .null, filter.source.map { .text($0.rawValue) } ?? .null,
            filter.provider.map { .text($0) } ?? .null, filter.createdSince.map { .timestamptz($0) } ?? .null,
            filter.reason.map { .text($0) } ?? .null, filter.limit.map { .int(Int64($0)) } ?? .null,
        ]
        do {
            return try await pool.query(sql, binds).map { try DeadLetter(row: $0) }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// The letters with these ids, in id order.
    /// - Throws: `.notFound` naming every id that matches no letter, before anything is done.
    package func letters(ids: [Int64]) async throws(OperationsError) -> [DeadLetter] {
        let found: [DeadLetter]
        do {
            found = try await pool.query(OperationsSQL.shared.selectLetters, [.integerArray(ids)]).map { try DeadLetter(row: $0) }
        } catch {
            throw OperationsError.wrapping(error)
        }
        let missing = Set(ids).subtracting(found.map(\.id)).sorted()
        guard missing.isEmpty else {
            throw OperationsError(.notFound, "no dead letter with id \(missing.map(String.init).joined(separator: ", "))")
        }
        return found
    }

    /// One letter with its history, raw delivery or job payload, and replay plan.
    /// - Throws: `.notFound`, `.databaseUnavailable`.
    package func detail(id: Int64) async throws(OperationsError) -> DeadLetterDetail {
        do {
            return try await pool.withConnection { connection in
                guard let row = try await connection.query(OperationsSQL.shared.selectLetters, [.text("{\(id)}")]).rows.first else {
                    throw OperationsError(.notFound, "no dead letter with id \(id)")
                }
                let letter = try DeadLetter(row: row)
                let subject: DeadLetterDetail.Subject
                switch letter.source {
                case .inboundEvent:
                    subject = try await connection.query(OperationsSQL.shared.selectInboundEvent, [.int(letter.sourceID)]).rows.first
                        .map { .inboundEvent(try DeadLetterDetail.InboundEvent(row: $0)) } ?? .missing
                case .job:
                    subject = try await connection.query(OperationsSQL.shared.selectJob, [.int(letter.sourceID)]).rows.first
                        .map { .job(try DeadLetterDetail.Job(row: $0)) } ?? .missing
                }
                return DeadLetterDetail(letter: letter, subject: subject)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// Puts the letter's work back in its queue and marks the letter `replayed`.
    ///
    /// An inbound event goes back to `pending` with `attempts = 0`, due now; a job to
    /// `available` with `attempt = 0`, run now. Error history (`last_error`, `errors`, the
    /// letter itself) is kept. If the work is no longer failed (already pending, processed,
    /// running), the letter is only marked replayed, and `effect` says so. Requires a note,
    /// from every surface (CLI, admin API, console): the next person reads what was fixed.
    /// - Throws: `.invalidArgument` (field `note`) without a note; `.notFound`; `.sourceMissing`
    ///   when the work row is gone (nothing is changed; discard the letter instead);
    ///   `.databaseUnavailable`.
    package func replay(id: Int64, by action: OperatorAction) async throws(OperationsError) -> ResolutionOutcome {
        guard let note = action.note, !note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw OperationsError.invalid("note", "replaying needs a note saying what was fixed")
        }
        return try await resolve(id: id, to: .replayed, by: action) { letter, connection in
            switch letter.source {
            case .inboundEvent:
                if try await connection.query(OperationsSQL.shared.requeueInboundEvent, [.int(letter.sourceID)]).affectedRows == 1 {
                    return "inbound event \(letter.sourceID) is pending again (attempts 0, due now)"
                }
                guard let row = try await connection.query(OperationsSQL.shared.inboundEventStatus, [.int(letter.sourceID)]).rows.first else {
                    throw OperationsError(.sourceMissing, "inbound event \(letter.sourceID) of dead letter \(letter.id) no longer exists; discard the letter instead")
                }
                let status: String = try row.decode("status")
                return "inbound event \(letter.sourceID) was already \(status); not requeued"
            case .job:
                if try await JobQueue.requeue(id: letter.sourceID, on: connection) {
                    return "job \(letter.sourceID) is available again (attempt 0, runs now)"
                }
                guard let row = try await connection.query(OperationsSQL.shared.jobState, [.int(letter.sourceID)]).rows.first else {
                    throw OperationsError(.sourceMissing, "job \(letter.sourceID) of dead letter \(letter.id) no longer exists; discard the letter instead")
                }
                let state: String = try row.decode("state")
                return "job \(letter.sourceID) was already \(state); not requeued"
            }
        }
    }

    /// Marks the letter `discarded`, leaving its work failed. Requires a note: the next person
    /// to look must be able to tell why nobody replayed it.
    /// - Throws: `.invalidArgument` (field `note`) without a note; `.notFound`; `.databaseUnavailable`.
    package func discard(id: Int64, by action: OperatorAction) async throws(OperationsError) -> ResolutionOutcome {
        guard let note = action.note, !note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw OperationsError.invalid("note", "discarding needs a note saying why")
        }
        return try await resolve(id: id, to: .discarded, by: action) { letter, _ in
            "\(letter.source.rawValue) \(letter.sourceID) left as it is (not requeued)"
        }
    }

    /// Locks the letter, runs `change` when it is open, resolves it and audits, in one transaction.
    private func resolve(
        id: Int64, to status: DeadLetter.Status, by action: OperatorAction,
        _ change: @Sendable (DeadLetter, PostgresConnection) async throws -> String
    ) async throws(OperationsError) -> ResolutionOutcome {
        do {
            return try await pool.transaction { connection in
                guard let row = try await connection.query(OperationsSQL.shared.lockLetter, [.int(id)]).rows.first else {
                    throw OperationsError(.notFound, "no dead letter with id \(id)")
                }
                let letter = try DeadLetter(row: row)
                guard letter.status == .open else {
                    return ResolutionOutcome(letter: letter, changed: false,
                                             effect: "already \(letter.status.rawValue); nothing changed")
                }
                let effect = try await change(letter, connection)
                guard let resolvedRow = try await connection.query(OperationsSQL.shared.resolveLetter, [
                    .int(id), .text(status.rawValue), .text(action.actor), action.note.map { .text($0) } ?? .null,
                ]).rows.first else {
                    throw OperationsError(.databaseUnavailable, "dead letter \(id) changed while locked")
                }
                let resolved = try DeadLetter(row: resolvedRow)
                let verb = status == .replayed ? "replay" : "discard"
                try await AuditTrail.record(
                    on: connection, by: action, action: "dead_letter.\(verb)", target: "dead_letter:\(id)",
                    details: [
                        .init("source", .string(letter.source.rawValue)), .init("source_id", .int(letter.sourceID)),
                        .init("note", .optional(action.note)), .init("effect", .string(effect)),
                    ] + action.context)
                return ResolutionOutcome(letter: resolved, changed: true, effect: effect)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }
}
