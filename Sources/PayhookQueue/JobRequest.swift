public import Foundation
import PayhookCore

/// One job to enqueue in a batch; see `JobQueue.enqueue(_:on:)`.
public struct JobRequest: Sendable, Hashable {
    /// Which handler runs it.
    public var kind: String
    /// JSON text; keep secrets out of it.
    public var payload: String
    /// Makes a second enqueue with the same key a no-op.
    public var uniqueKey: String?
    /// Not before this time; now when nil.
    public var runAt: Date?
    /// Attempts before discarding; the queue's default when nil.
    public var maxAttempts: Int?

    /// Creates a request.
    public init(kind: String, payload: String = "{}", uniqueKey: String? = nil, runAt: Date? = nil, maxAttempts: Int? = nil) {
        self.kind = kind
        self.payload = payload
        self.uniqueKey = uniqueKey
        self.runAt = runAt
        self.maxAttempts = maxAttempts
    }

    /// A request for typed arguments: their kind, their payload written with the JSON writer.
    package init<Args: JobArgs>(_ args: Args, uniqueKey: String? = nil, runAt: Date? = nil, maxAttempts: Int? = nil) {
        self.init(kind: Args.kind, payload: args.payload.rendered, uniqueKey: uniqueKey, runAt: runAt, maxAttempts: maxAttempts)
    }

    /// The batch as one JSON array for `jsonb_to_recordset`. The payload travels as a JSON
    /// string and is parsed by the server, so payload text can never add or change fields.
    static func jsonArray(_ requests: [JobRequest]) -> String {
        var out = "["
        for (index, request) in requests.enumerated() {
            if index > 0 { out += "," }
            out += "{\"kind\":" + JSONString.quote(request.kind)
            out += ",\"payload\":" + JSONString.quote(request.payload)
            out += ",\"unique_key\":" + (request.uniqueKey.map(JSONString.quote) ?? "null")
            out += ",\"run_at\":" + (request.runAt.map { String(format: "%.6f", $0.timeIntervalSince1970) } ?? "null")
            out += ",\"max_attempts\":" + (request.maxAttempts.map { String($0) } ?? "null") + "}"
        }
        return out + "]"
    }
}
