import Foundation
import PayhookPostgres

/// One row of `dead_letters`: work that exhausted its retries, and what an operator did about it.
struct DeadLetter: Sendable, Equatable {
    /// What failed: a delivery's normalization or a queued job. Stored as text in `source`.
    enum Source: String, Sendable, CaseIterable {
        case inboundEvent = "inbound_event"
        case job
    }

    /// The closed set of letter states; only `open` letters can be replayed or discarded.
    enum Status: String, Sendable, CaseIterable {
        case open, replayed, discarded
    }

    let id: Int64
    let source: Source
    let sourceID: Int64
    let provider: String?
    let reason: String
    let error: String?
    let status: Status
    let createdAt: Date
    let resolvedAt: Date?
    let resolvedBy: String?
    let note: String?

    /// Decodes a row selected with `DeadLetterSQL.letterColumns`.
    init(row: PostgresRow) throws {
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

    var json: JSONDocument {
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
struct DeadLetterFilter: Sendable, Equatable {
    /// Defaults to `open`: the letters that still need someone.
    var status: DeadLetter.Status? = .open
    var source: DeadLetter.Source?
    var provider: String?
    /// Only letters created at or after this instant.
    var createdSince: Date?
    /// Case-insensitive substring of `reason`.
    var reason: String?
    /// At most this many, newest first; `nil` for all.
    var limit: Int?

    /// The filter as the `details` of an audit row, so the log says what `--all` meant.
    var json: JSONDocument {
        .object([
            .init("status", .optional(status?.rawValue)), .init("source", .optional(source?.rawValue)),
            .init("provider", .optional(provider)), .init("since", .timestamp(createdSince)),
            .init("reason", .optional(reason)),
        ])
    }
}

/// A `--since` argument: a look-back (`30m`, `2h`, `7d`, `45s`) or an ISO 8601 instant.
enum SinceArgument {
    /// The instant `text` names, relative to `now`; `nil` when it is neither form.
    static func parse(_ text: String, now: Date = Date()) -> Date? {
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

    static let help = "expected a look-back such as 30m, 2h or 7d, or an ISO 8601 time such as 2025-03-20T12:00:00Z"
}
