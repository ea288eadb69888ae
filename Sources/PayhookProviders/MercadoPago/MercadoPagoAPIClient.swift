import Foundation
import PayhookCore
import PayhookHTTP

/// Mercado Pago's API: `GET /v1/orders/{id}` and `GET /v1/payments/{id}` with a Bearer
/// access token.
///
/// Mercado Pago webhooks are thin (an id and an action), so the processors fetch the state
/// through this client. The access token is sent only in the `Authorization` header and never
/// appears in errors, `description` or reflection.
///
/// Safe to share across tasks: it holds immutable values and an `HTTPClient`, which is itself
/// safe to call concurrently.
public struct MercadoPagoAPIClient: PaymentProviderClient, CustomStringConvertible, CustomReflectable {
    public var provider: ProviderID { .mercadopago }

    private let baseURL: URL
    private let accessToken: String
    private let http: any HTTPClient
    private let timeout: Duration

    /// - Parameters:
    ///   - baseURL: e.g. `https://api.mercadopago.com`, or the emulator's
    ///     `http://127.0.0.1:{port}/mercadopago`; paths are appended to it.
    ///   - accessToken: the application's access token (`APP_USR-…`).
    ///   - http: the transport; its deadline enforcement is what makes `timeout` hold.
    ///   - timeout: deadline for each call, waiting for a transport slot included.
    public init(baseURL: URL, accessToken: String, http: any HTTPClient, timeout: Duration = .seconds(10)) {
        self.baseURL = baseURL
        self.accessToken = accessToken
        self.http = http
        self.timeout = timeout
    }

    /// `GET /v1/orders/{id}`, decoded by ``MercadoPagoOrderDecoder``.
    /// - Throws: `ProviderAPIError`: `.notFound` (404 or an empty id), `.unauthorized`
    ///   (401/403), `.unavailable` (429, 5xx, connection), `.timeout`, `.invalidResponse`
    ///   (the body does not decode, or an unexpected status).
    public func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        let operation = "mercadopago GET /v1/orders"
        let body = try await get("/v1/orders/", id: id, operation: operation)
        do {
            return try MercadoPagoOrderDecoder.decode(body)
        } catch {
            throw ProviderAPIError(.invalidResponse, "\(operation): \(error)")
        }
    }

    /// `GET /v1/payments/{id}` (a classic payment), decoded by ``MercadoPagoPaymentDecoder``.
    /// - Throws: `ProviderAPIError`, as for ``fetchOrder(id:)``.
    public func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        let operation = "mercadopago GET /v1/payments"
        let body = try await get("/v1/payments/", id: id, operation: operation)
        do {
            return try MercadoPagoPaymentDecoder.decode(body)
        } catch {
            throw ProviderAPIError(.invalidResponse, "\(operation): \(error)")
        }
    }

    private func get(_ collection: String, id: String, operation: String) async throws(ProviderAPIError) -> [UInt8] {
        try ProviderAPIRequest.checkID(id, operation: operation)
        let url = try ProviderAPIRequest.url(
            base: baseURL, path: collection + ProviderAPIRequest.pathSegment(id), operation: operation)
        let request = ProviderAPIRequest(
            operation: operation, method: "GET", url: url,
            headers: [("Authorization", "Bearer \(accessToken)"), ("Accept", "application/json")],
            timeout: timeout)
        return try await request.send(via: http)
    }

    /// Names the provider and base URL only; the access token is never rendered.
    public var description: String { "MercadoPagoAPIClient(\(baseURL.absoluteString))" }

    /// Empty, so `dump` and `String(reflecting:)` cannot reveal the access token.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
