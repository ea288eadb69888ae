import Foundation
import PayhookCore
import PayhookHTTP

/// PXP Unity's transactions API: `GET {base}/transactions/{systemTransactionId}`.
///
/// PXP retries a webhook only for about ten seconds, so non-final transactions are reconciled
/// by polling through this client. Every request carries `Authorization: PXP-UST1
/// {tokenId}:{timestamp}:{hmac}` (see ``PXPRequestSigner``, whose signed content is
/// UNCONFIRMED), a fresh `X-Request-Id` and `X-Client-Id`. The token value never leaves this
/// process except as an HMAC, and never appears in errors, `description` or reflection.
///
/// PXP has no order resource: ``fetchOrder(id:)`` throws `.unsupported`.
public struct PXPAPIClient: PaymentProviderClient, CustomStringConvertible, CustomReflectable {
    public var provider: ProviderID { .pxp }

    private let baseURL: URL
    private let clientID: String
    private let tokenID: String
    private let tokenValue: String
    private let merchant: String
    private let site: String
    private let http: any HTTPClient
    private let timeout: Duration
    private let now: @Sendable () -> Date
    private let makeRequestID: @Sendable () -> String

    /// - Parameters:
    ///   - baseURL: the API base including its version path, e.g.
    ///     `https://api-services.pxp.io/api/v1` (sandbox `https://api-services.test.pxp.io/api/v1`),
    ///     or the emulator's `http://127.0.0.1:{port}/pxp/api/v1`.
    ///   - clientID: sent as `X-Client-Id`.
    ///   - tokenID: the token's id, first part of the `Authorization` credential.
    ///   - tokenValue: the token's secret, used only as the HMAC key.
    ///   - merchant: merchant code, sent in charge requests.
    ///   - site: site code, sent in charge requests.
    ///   - http: the transport.
    ///   - timeout: deadline for each call.
    ///   - now: the clock for the signed timestamp; injected by tests.
    ///   - makeRequestID: `X-Request-Id` for each request, a fresh lowercase UUID by default.
    public init(
        baseURL: URL, clientID: String, tokenID: String, tokenValue: String, merchant: String, site: String,
        http: any HTTPClient, timeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> Date = { Date() },
        makeRequestID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }
    ) {
        self.baseURL = baseURL
        self.clientID = clientID
        self.tokenID = tokenID
        self.tokenValue = tokenValue
        self.merchant = merchant
        self.site = site
        self.http = http
        self.timeout = timeout
        self.now = now
        self.makeRequestID = makeRequestID
    }

    /// Always throws `.unsupported`: PXP has transactions, not orders.
    public func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        throw ProviderAPIError(.unsupported, "pxp: no order resource; fetch the transaction")
    }

    /// `GET {base}/transactions/{systemTransactionId}`, decoded by ``PXPTransactionDecoder``.
    /// - Parameter id: the `systemTransactionId` from the webhook or the charge response.
    /// - Throws: `ProviderAPIError`: `.notFound` (404 or an empty id), `.unauthorized`
    ///   (401/403), `.unavailable` (429, 5xx, connection), `.timeout`, `.invalidResponse`.
    public func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        let operation = "pxp GET /transactions"
        try ProviderAPIRequest.checkID(id, operation: operation)
        let path = "/transactions/" + ProviderAPIRequest.pathSegment(id)
        let body = try await send(method: "GET", path: path, body: [], operation: operation)
        do {
            return try PXPTransactionDecoder.decode(body)
        } catch {
            throw ProviderAPIError(.invalidResponse, "\(operation): \(error)")
        }
    }

    /// Signs and sends one request; `path` is relative to the base URL and already escaped.
    private func send(method: String, path: String, body: [UInt8], operation: String) async throws(ProviderAPIError) -> [UInt8] {
        let url = try ProviderAPIRequest.url(base: baseURL, path: path, operation: operation)
        let timestamp = String(Int64(now().timeIntervalSince1970.rounded(.down)))
        let requestID = makeRequestID()
        // The signature covers the path as it goes on the wire, base path included, so the
        // same request verifies whether PXP sits at the host root or behind a prefix.
        let signature = PXPRequestSigner.signature(
            tokenValue: tokenValue, timestamp: timestamp, requestID: requestID, method: method,
            path: ProviderAPIRequest.basePath(baseURL) + path, body: body)
        var headers: [(String, String)] = [
            ("Authorization", PXPRequestSigner.authorization(tokenID: tokenID, timestamp: timestamp, signature: signature)),
            ("X-Request-Id", requestID),
            ("X-Client-Id", clientID),
            ("Accept", "application/json"),
        ]
        if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
        let request = ProviderAPIRequest(
            operation: operation, method: method, url: url, headers: headers, body: body, timeout: timeout)
        return try await request.send(via: http)
    }

    /// Names the provider, base URL, merchant and site; the token value is never rendered.
    public var description: String { "PXPAPIClient(\(baseURL.absoluteString), \(merchant)/\(site))" }

    /// Empty, so `dump` and `String(reflecting:)` cannot reveal the token value.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
