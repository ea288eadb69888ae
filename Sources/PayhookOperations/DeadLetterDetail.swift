package import Foundation
import PayhookPostgres
package import PayhookCore

/// One dead letter with everything needed to decide about it: the error history, the raw
/// delivery or job payload, and what a replay would do.
package struct DeadLetterDetail: Sendable {
    /// The delivery behind an `inbound_event` letter. Stored headers are the non-secret ones
    /// ingress chose to keep, so they are shown as stored.
    package struct InboundEvent: Sendable {
        package let id: Int64
        package let provider: String
        package let account: String
        package let dedupKey: String
        package let eventType: String?
        package let receivedAt: Date
        package let remoteAddress: String?
        package let headersJSON: String
        package let query: String
        package let body: [UInt8]
        package let status: String
        package let attempts: Int
        package let nextAttemptAt: Date
        package let lastError: String?
        package let processedAt: Date?

        init(row: PostgresRow) throws {
            id = try row.decode("id")
            provider = try row.decode("provider")
            account = try row.decode("account")
            dedupKey = try row.decode("dedup_key")
            eventType = try row.decode("event_type")
            receivedAt = try row.decode("received_at")
            remoteAddress = try row.decode("remote_addr")
            headersJSON = try row.decode("headers")
            query = try row.decode("query")
            body = try row.decode("body")
            status = try row.decode("status")
            attempts = try row.decode("attempts")
            nextAttemptAt = try row.decode("next_attempt_at")
            lastError = try row.decode("last_error")
            processedAt = try row.decode("processed_at")
        }

        /// The body as text when it is valid UTF-8 (every JSON webhook), else base64, so any
        /// byte sequence can be shown and copied without corrupting a terminal.
        package var bodyRendering: (encoding: String, text: String) {
            if let text = String(validating: body, as: UTF8.self) { return ("utf8", text) }
            return ("base64", Data(body).base64EncodedString())
        }

        var json: JSONOutput {
            let rendered = bodyRendering
            return .object([
                .init("id", .int(id)), .init("provider", .string(provider)), .init("account", .string(account)),
                .init("dedup_key", .string(dedupKey)), .init("event_type", .optional(eventType)),
                .init("received_at", .timestamp(receivedAt)), .init("remote_addr", .optional(remoteAddress)),
                .init("status", .string(status)), .init("attempts", .int(Int64(attempts))),
                .init("next_attempt_at", .timestamp(nextAttemptAt)), .init("last_error", .optional(lastError)),
                .init("processed_at", .timestamp(processedAt)), .init("headers", .raw(headersJSON)),
                .init("query", .string(query)), .init("body_encoding", .string(rendered.encoding)),
                .init("body", .string(rendered.text)), .init("body_bytes", .int(Int64(body.count))),
            ])
        }
    }

    /// The job behind a `job` letter; `errors` is the queue's JSON array of past failures.
    package struct Job: Sendable {
        package let id: Int64
        package let kind: String
        package let payloadJSON: String
        package let state: String
        package let attempt: Int
        package let maxAttempts: Int
        package let runAt: Date
        package let errorsJSON: String
        package let createdAt: Date
        package let finalizedAt: Date?

        init(row: PostgresRow) throws {
            id = try row.decode("id")
            kind = try row.decode("kind")
            payloadJSON = try row.decode("payload")
            state = try row.decode("state")
            attempt = try row.decode("attempt")
            maxAttempts = try row.decode("max_attempts")
            runAt = try row.decode("run_at")
            errorsJSON = try row.decode("errors")
            createdAt = try row.decode("created_at")
            finalizedAt = try row.decode("finalized_at")
        }

        var json: JSONOutput {
            .object([
                .init("id", .int(id)), .init("kind", .string(kind)), .init("state", .string(state)),
                .init("attempt", .int(Int64(attempt))), .init("max_attempts", .int(Int64(maxAttempts))),
                .init("run_at", .timestamp(runAt)), .init("created_at", .timestamp(createdAt)),
                .init("finalized_at", .timestamp(finalizedAt)), .init("errors", .raw(errorsJSON)),
                .init("payload", .raw(payloadJSON)),
            ])
        }
    }

    /// What the letter points at; `missing` when the row is gone.
    package enum Subject: Sendable {
        case inboundEvent(InboundEvent)
        case job(Job)
        case missing
    }

    package let letter: DeadLetter
    package let subject: Subject

    /// One sentence an operator can act on: what `replay --execute` would change right now.
    package var replayPlan: String {
        guard letter.status == .open else {
            return "nothing: the letter is already \(letter.status.rawValue) (replay is idempotent)"
        }
        switch subject {
        case .inboundEvent(let event):
            return event.status == "dead"
                ? "set inbound event \(event.id) back to pending (attempts 0, due now; last_error kept), so a processor "
                    + "normalizes it again; effects already applied are not repeated; mark this letter replayed"
                : "inbound event \(event.id) is already \(event.status); only mark this letter replayed"
        case .job(let job):
            return ["discarded", "retryable"].contains(job.state)
                ? "set job \(job.id) (\(job.kind)) available (attempt 0, run now; errors kept); mark this letter replayed"
                : "job \(job.id) is \(job.state); only mark this letter replayed"
        case .missing:
            return "nothing: the \(letter.source.rawValue) \(letter.sourceID) no longer exists; discard this letter"
        }
    }

    package var json: JSONOutput {
        var members: [JSONOutput.Member] = [.init("dead_letter", letter.json)]
        switch subject {
        case .inboundEvent(let event): members.append(.init("inbound_event", event.json))
        case .job(let job): members.append(.init("job", job.json))
        case .missing: members.append(.init(letter.source.rawValue, .null))
        }
        members.append(.init("replay_would", .string(replayPlan)))
        return .object(members)
    }
}
