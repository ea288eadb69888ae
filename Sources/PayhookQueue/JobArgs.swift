package import PayhookCore

/// A job's typed arguments: the kind that runs them, and the payload they are stored as.
///
/// Whoever enqueues and whoever runs share one type, so a payload key is spelled once:
///
/// ```swift
/// try await queue.enqueue(kind: "fulfill_order", payload: "{\"order_id\":\(id)}", on: connection)  // wrong
/// try await queue.enqueue(FulfillOrderArgs(orderID: id), uniqueKey: key, on: connection)             // right
/// // and in the handler:
/// let args = try job.decodeArgs(FulfillOrderArgs.self)
/// ```
///
/// Why not `Codable`: encoding would go through `JSONEncoder` and decoding through
/// `JSONDecoder`, a second writer and reader beside the project's own (``JSONOutput`` writes,
/// ``JSONDocument`` reads through ``JSONValue``), with their own rules on numbers and keys.
///
/// The payload's keys are a stored contract: jobs enqueued by an older release are still in
/// the table after an upgrade and must decode, so a key is never renamed, only added (and an
/// added key must be optional when reading).
package protocol JobArgs: Sendable {
    /// The `jobs.kind` whose handler runs these arguments.
    static var kind: String { get }
    /// The payload object, written with the project's JSON writer; no secrets.
    var payload: JSONOutput { get }
    /// Reads the arguments back from a stored payload.
    /// - Throws: `JobPayloadError` naming the key that is missing or of the wrong type.
    init(payload: JobPayload) throws(JobPayloadError)
}

/// A stored job payload (a JSON object) as `JobArgs` read it: typed accessors by key.
package struct JobPayload: Sendable {
    private let object: JSONObject

    /// Parses `json`, the `jobs.payload` text.
    /// - Throws: `.notAnObject` when it is not one JSON object.
    package init(json: String) throws(JobPayloadError) {
        guard case .object(let object)? = JSONValue.parse(Array(json.utf8)) else { throw JobPayloadError(.notAnObject) }
        self.object = object
    }

    /// The integer at `key`, written without fraction or exponent.
    package func int64(_ key: String) throws(JobPayloadError) -> Int64 {
        guard let value = try optionalInt64(key) else { throw JobPayloadError(.missing, key: key) }
        return value
    }

    /// The integer at `key`, or nil when the key is absent or `null`.
    package func optionalInt64(_ key: String) throws(JobPayloadError) -> Int64? {
        guard let value = object[key], value != .null else { return nil }
        guard let number = value.exactInteger else { throw JobPayloadError(.wrongType, key: key, expected: "an integer") }
        return number
    }

    /// The string at `key`.
    package func string(_ key: String) throws(JobPayloadError) -> String {
        guard let value = try optionalString(key) else { throw JobPayloadError(.missing, key: key) }
        return value
    }

    /// The string at `key`, or nil when the key is absent or `null`.
    package func optionalString(_ key: String) throws(JobPayloadError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let text) = value else { throw JobPayloadError(.wrongType, key: key, expected: "a string") }
        return text
    }
}

/// Why a stored payload does not give a job's arguments. The description names keys and
/// expected types, never a payload value.
package struct JobPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        case notAnObject, missing, wrongType
    }

    package let code: Code
    package let key: String?
    package let expected: String?

    package init(_ code: Code, key: String? = nil, expected: String? = nil) {
        self.code = code
        self.key = key
        self.expected = expected
    }

    package var description: String {
        switch code {
        case .notAnObject: "the payload is not a JSON object"
        case .missing: "the payload has no \(key ?? "?")"
        case .wrongType: "the payload's \(key ?? "?") is not \(expected ?? "of the expected type")"
        }
    }
}
