import Foundation
import PayhookCore

/// One call to a provider API, shared by the provider clients so that URL building, path
/// escaping and the status table are the same for all of them.
///
/// `operation` names the call in errors (`"pxp GET /transactions"`); it never contains ids,
/// credentials or bodies, and neither does anything else this type puts in an error.
struct ProviderAPIRequest: Sendable {
    var operation: String
    var method: String
    var url: URL
    var headers: [(String, String)]
    var body: [UInt8] = []
    var timeout: Duration

    /// Sends the request and returns the body of a 2xx answer, or of an answer whose status is
    /// in `accepting` (a provider that puts a decline in a 4xx with the resource as body).
    /// - Throws: `ProviderAPIError` from the status (`forStatus`) or the transport failure.
    func send(via http: any HTTPClient, accepting: Set<Int> = []) async throws(ProviderAPIError) -> [UInt8] {
        let response: HTTPClientResponse
        do {
            response = try await http.send(HTTPClientRequest(
                method: method, url: url, headers: headers, body: body, timeout: timeout))
        } catch {
            throw ProviderAPIError(transport: error, operation: operation)
        }
        if accepting.contains(response.status) { return response.body }
        if let error = ProviderAPIError.forStatus(response.status, operation: operation) { throw error }
        return response.body
    }

    /// `base` + `path`, where `path` starts with `/` and is already percent-encoded.
    ///
    /// String concatenation rather than `appendingPathComponent`, which would escape the `%`
    /// of an already escaped id a second time.
    /// - Throws: `.invalidResponse` if the result is not a URL (a misconfigured base URL).
    static func url(base: URL, path: String, operation: String) throws(ProviderAPIError) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + path) else {
            throw ProviderAPIError(.invalidResponse, "\(operation): base URL and path do not form a URL")
        }
        return url
    }

    /// The percent-encoded path of `base` without a trailing `/` (`""` for a bare host).
    static func basePath(_ base: URL) -> String {
        var path = URLComponents(url: base, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// `id` as one path segment: every byte outside RFC 3986's unreserved set is escaped,
    /// including `/`, `?`, `#` and `%`, so an id can never change which resource is addressed.
    static func pathSegment(_ id: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(id.utf8.count)
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                escaped.unicodeScalars.append("%")
                escaped.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                escaped.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return escaped
    }

    /// Rejects ids that cannot name a resource before any request is made.
    ///
    /// An empty id would address the collection (`GET /v1/orders/` lists orders), and `.` or
    /// `..` would be resolved away by the URL machinery; all three are reported as not found.
    static func checkID(_ id: String, operation: String) throws(ProviderAPIError) {
        if id.isEmpty || id == "." || id == ".." {
            throw ProviderAPIError(.notFound, "\(operation): empty or relative id")
        }
    }

    /// Rejects an idempotency key before any request is made: 1 to 64 characters (Mercado
    /// Pago's and Adyen's limit, applied to PXP's `merchantTransactionId` too so one key works
    /// everywhere), printable ASCII only, since it travels in a header.
    ///
    /// The message gives the length, never the key.
    /// - Throws: `.invalidResponse` (not retryable: the same key would fail again).
    /// - Parameter maxLength: the provider's limit when it is below 64 (PXP: 50).
    static func checkIdempotencyKey(_ key: String, operation: String, maxLength: Int = 64) throws(ProviderAPIError) {
        let length = key.utf8.count
        guard (1...maxLength).contains(length) else {
            throw ProviderAPIError(
                .invalidResponse, "\(operation): idempotency key must be 1 to \(maxLength) characters, got \(length); not sent")
        }
        guard key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw ProviderAPIError(
                .invalidResponse, "\(operation): idempotency key must be printable ASCII without spaces; not sent")
        }
    }

    /// Rejects a charge whose required credential field is empty, before any request is made.
    /// - Throws: `.invalidResponse` naming the field, never its value.
    static func checkRequired(_ value: String?, field: String, operation: String) throws(ProviderAPIError) -> String {
        guard let value, !value.isEmpty else {
            throw ProviderAPIError(.invalidResponse, "\(operation): \(field) is required; not sent")
        }
        return value
    }

    /// Rejects a charge of zero or less before any request is made.
    static func checkPositive(_ amount: Money, operation: String) throws(ProviderAPIError) {
        guard amount.minorUnits > 0 else { throw ProviderAPIError(.invalidResponse, "\(operation): amount must be positive; not sent") }
    }

    /// Runs `decode` on an answer: a body that does not decode is `.invalidResponse`, naming
    /// the operation and what the decoder found (never a credential: answers carry none).
    static func decoding<T>(_ operation: String, _ decode: () throws -> T) throws(ProviderAPIError) -> T {
        do {
            return try decode()
        } catch {
            throw ProviderAPIError(.invalidResponse, "\(operation): \(error)")
        }
    }
}
