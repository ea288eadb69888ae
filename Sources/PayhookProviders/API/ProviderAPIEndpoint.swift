import Foundation
import PayhookCore

/// Where a provider client sends its calls and how: the API's base URL, the transport, and the
/// deadline of each call.
///
/// Each provider client holds one and adds only its own credentials and headers, so joining a
/// path to the base and sending with the deadline is written once for the three of them. It
/// holds no credential, so it may appear in a client's `description`.
struct ProviderAPIEndpoint: Sendable {
    let baseURL: URL
    let http: any HTTPClient
    let timeout: Duration

    /// Sends `method` to `path` (percent-encoded, starting with `/`, query included) below the
    /// base URL and returns the body of a 2xx answer, or of one whose status is in `accepting`.
    /// - Throws: `ProviderAPIError`: `.invalidResponse` when base and path form no URL, else as
    ///   ``ProviderAPIRequest/send(via:accepting:)``.
    func send(
        _ operation: String, method: String, path: String, headers: [(String, String)], body: [UInt8] = [],
        accepting: Set<Int> = []
    ) async throws(ProviderAPIError) -> [UInt8] {
        let url = try ProviderAPIRequest.url(base: baseURL, path: path, operation: operation)
        let request = ProviderAPIRequest(
            operation: operation, method: method, url: url, headers: headers, body: body, timeout: timeout)
        return try await request.send(via: http, accepting: accepting)
    }
}
