/// A request whose header names were lowercased once, when it was built, so that a lookup
/// lowercases only the name asked for: the header lookup shared by the HTTP server's requests
/// and ingress's ``WebhookRequest``.
public protocol LowercasedHeaders {
    /// Header pairs in arrival order, names lowercased.
    var headers: [(name: String, value: String)] { get }
}

extension LowercasedHeaders {
    /// The first value of a header, matched case-insensitively; `nil` if absent.
    @inlinable
    public func header(_ name: String) -> String? {
        let wanted = name.asciiLowercased()
        return headers.first { $0.name == wanted }?.value
    }
}
