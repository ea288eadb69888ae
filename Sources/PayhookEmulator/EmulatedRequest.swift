public import PayhookCore

/// One request the emulator received, as kept in its log for assertions.
///
/// Credentials are not kept: the values of `authorization`, `x-api-key` and `cookie` are
/// replaced with `"<redacted>"`, so a test can assert that the header was sent without the log
/// ever holding a secret. Bodies are not kept either.
public struct EmulatedRequest: Sendable {
    /// The provider whose path prefix matched; `nil` for a path under no provider.
    public let provider: ProviderID?
    /// The endpoint name (`"order"`, `"createOrder"`, `"payments"`, `"transaction"`, …);
    /// `nil` when no endpoint matched.
    public let endpoint: String?
    /// The resource id or idempotency key the request addressed, if any.
    public let resourceID: String?
    public let method: String
    /// The percent-decoded path as the server saw it.
    public let path: String
    /// Header pairs in arrival order, names lowercased, credentials redacted.
    public let headers: [(name: String, value: String)]
    /// The status the emulator decided to answer (a delayed answer is logged when decided).
    public let status: Int

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }

    static let redactedHeaders: Set<String> = ["authorization", "x-api-key", "cookie", "proxy-authorization"]

    static func redact(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        headers.map { redactedHeaders.contains($0.name) ? (name: $0.name, value: "<redacted>") : $0 }
    }
}
