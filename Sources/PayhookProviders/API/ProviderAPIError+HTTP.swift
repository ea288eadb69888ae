import PayhookCore

extension ProviderAPIError {
    /// The error an HTTP status means for a provider API call, or `nil` for a 2xx.
    ///
    /// One table for every provider, so a retry policy can rely on the kinds: 404 is final,
    /// 401/403 wait for a configuration change, 429 and 5xx are retried later. Any other status
    /// (400, 409, 422, a redirect that was not followed) is an answer payhook did not expect,
    /// reported as `.invalidResponse`.
    /// - Parameter operation: what was called, e.g. `"mercadopago GET /v1/orders"`; no ids
    ///   or credentials, so the message is safe to log.
    static func forStatus(_ status: Int, operation: String) -> ProviderAPIError? {
        switch status {
        case 200...299: nil
        case 404: ProviderAPIError(.notFound, "\(operation): HTTP 404")
        case 401, 403: ProviderAPIError(.unauthorized, "\(operation): HTTP \(status), credentials rejected")
        case 429, 500...599: ProviderAPIError(.unavailable, "\(operation): HTTP \(status)")
        default: ProviderAPIError(.invalidResponse, "\(operation): unexpected HTTP \(status)")
        }
    }

    /// The error a transport failure means for a provider API call.
    ///
    /// A connection failure happened before the provider saw the request (or the provider was
    /// down), so it is `.unavailable`. A timeout and a cancellation both leave the outcome
    /// unknown, which is what `.timeout` promises callers (reconcile or retry with the same
    /// idempotency key, never a new one). A non-HTTP answer is `.invalidResponse`.
    init(transport error: HTTPClientError, operation: String) {
        switch error.kind {
        case .timeout: self.init(.timeout, "\(operation): no response before the deadline")
        case .cancelled: self.init(.timeout, "\(operation): cancelled before a response; outcome unknown")
        case .connection: self.init(.unavailable, "\(operation): connection failed")
        case .invalidResponse: self.init(.invalidResponse, "\(operation): the answer was not HTTP")
        }
    }
}
