package import Foundation
package import PayhookPostgres
import PayhookAdmin
package import PayhookCore

/// One row of `dead_letters`: work that exhausted its retries, and what an operator did about it.
package struct DeadLetter: Sendable, Equatable {
    /// What failed: a delivery's normalization or a queued job. Stored as text in `source`.
    package enum Source: String, Sendable, CaseIterable {
        case inboundEvent = "inbound_event"
        case job
    }

    /// The closed set of letter states; only `open` letters can be replayed or discarded.
    package enum Status: String, Sendable, CaseIterable {
        case open, replayed, discarded
    }

    package let id: Int64
    package let source: Source
    package let sourceID: Int64
    package let provider: String?
    package let reason: String
    package let error: String?
    package let status: Status
    package let createdAt: Date
    package let resolvedAt: Date?
    package let resolvedBy: String?
    package let note: String?

    /// Decodes a row selected with `DeadLetterSQL.letterColumns`.
    package init(row: PostgresRow) throws {
        id = try row.decode("id")
        let sourceText: String = try row.decode("source")
        let statusText: String = try row.decode("status")
        guard let source = Source(rawValue: sourceText), let status = Status(rawValue: statusText) else {
            throw OperationsError(.databaseUnavailable, "dead letter has an unknown source or status; is the schema newer than this binary?")
        }
        self.source = source
        self.status = status
        sourceID = try row.decode("source_id")
        provider = try row.decode("provider")
        reason = try row.decode("reason")
        error = try row.decode("error")
        createdAt = try row.decode("created_at")
        resolvedAt = try row.decode("resolved_at")
        resolvedBy = try row.decode("resolved_by")
        note = try row.decode("note")
    }

    package var json: JSONOutput {
        .object([
            .init("id", .int(id)), .init("source", .string(source.rawValue)), .init("source_id", .int(sourceID)),
            .init("provider", .optional(provider)), .init("reason", .string(reason)), .init("error", .optional(error)),
            .init("status", .string(status.rawValue)), .init("created_at", .timestamp(createdAt)),
            .init("resolved_at", .timestamp(resolvedAt)), .init("resolved_by", .optional(resolvedBy)),
            .init("note", .optional(note)),
        ])
    }
}

/// Which dead letters `list` and `replay --all` look at. `nil` fields do not filter.
package struct DeadLetterFilter: Sendable, Equatable {
    package init(status: DeadLetter.Status? = .open, source: DeadLetter.Source? = nil, provider: String? = nil, createdSince: Date? = nil, reason: String? = nil, limit: Int? = nil) {
        self.status = status
        self.source = source
        self.provider = provider
        self.createdSince = createdSince
        self.reason = reason
        self.limit = limit
    }

    /// Defaults to `open`: the letters that still need someone.
    package var status: DeadLetter.Status? = .open
    package var source: DeadLetter.Source?
    package var provider: String?
    /// Only letters created at or after this instant.
    package var createdSince: Date?
    /// Case-insensitive substring of `reason`.
    package var reason: String?
    /// At most this many, newest first; `nil` for all.
    package var limit: Int?

    /// The filter as the `details` of an audit row, so the log says what `--all` meant.
    package var json: JSONOutput {
        .object([
            .init("status", .optional(status?.rawValue)), .init("source", .optional(source?.rawValue)),
            .init("provider", .optional(provider)), .init("since", .timestamp(createdSince)),
            .init("reason", .optional(reason)),
        ])
    }
}

/// A `--since` argument: a look-back (`30m`, `2h`, `7d`, `45s`) or an ISO 8601 instant.
package enum SinceArgument {
    /// The instant `text` names, relative to `now`; `nil` when it is neither form.
    package static func parse(_ text: String, now: Date = Date()) -> Date? {
        if let unit = text.last, let amount = Int(text.dropLast()), amount >= 0 {
            let seconds: Int? = switch unit {
            case "s": amount
            case "m": amount * 60
            case "h": amount * 3600
            case "d": amount * 86400
            default: nil
            }
            if let seconds { return now.addingTimeInterval(-Double(seconds)) }
        }
        return try? Date(text, strategy: .iso8601)
    }

    package static let help = "expected a look-back such as 30m, 2h or 7d, or an ISO 8601 time such as 2025-03-20T12:00:00Z"
}

/// The result of replaying or discarding one letter.
package struct ResolutionOutcome: Sendable {
    /// The letter after the call.
    let letter: DeadLetter
    /// False when the letter was not open: nothing was written (idempotent).
    package let changed: Bool
    /// What happened to the work, in words.
    package let effect: String

    package var json: JSONOutput {
        .object([.init("dead_letter", letter.json), .init("changed", .bool(changed)), .init("effect", .string(effect))])
    }
}
