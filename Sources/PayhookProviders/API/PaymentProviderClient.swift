import PayhookCore

/// A provider's HTTP API as payhook uses it: fetching authoritative state when a webhook is
/// thin or must be confirmed (and, later, charging stored credentials).
///
/// One implementation per provider talks to the real API (base URL and credentials from
/// configuration); tests and `ops/run` point the same implementations at the in-repo emulator.
/// A fourth provider is added by implementing this protocol and registering it in
/// `PaymentProviderClients`.
public protocol PaymentProviderClient: Sendable {
    var provider: ProviderID { get }

    /// The order with its payments, e.g. Mercado Pago `GET /v1/orders/{id}`.
    /// - Throws: `ProviderAPIError` (`.unsupported` where the provider has no order resource).
    func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot

    /// One payment or transaction, e.g. Mercado Pago `GET /v1/payments/{id}` or PXP
    /// `GET /transactions/{systemTransactionId}`.
    func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot
}

/// Why a provider call failed. Descriptions never include credentials or response bodies.
public struct ProviderAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// 404: the resource does not exist (a dead letter, not a retry).
        case notFound = "not_found"
        /// No answer within the deadline: the outcome is unknown; retry or reconcile.
        case timeout
        /// 5xx, 429 or a connection failure: retry later.
        case unavailable
        /// 401/403: credentials are wrong; retrying will not help until configuration changes.
        case unauthorized
        /// The answer could not be decoded.
        case invalidResponse = "invalid_response"
        /// The provider has no such resource or operation.
        case unsupported
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// Timeouts and unavailability are worth retrying with backoff; the rest are not.
    public var isRetryable: Bool { kind == .timeout || kind == .unavailable }

    public var description: String { "\(kind.rawValue): \(message)" }
}

/// The configured client of each provider.
public struct PaymentProviderClients: Sendable {
    private let clients: [ProviderID: any PaymentProviderClient]

    public init(_ clients: [any PaymentProviderClient]) {
        var byProvider: [ProviderID: any PaymentProviderClient] = [:]
        for client in clients { byProvider[client.provider] = client }
        self.clients = byProvider
    }

    public func client(for provider: ProviderID) -> (any PaymentProviderClient)? { clients[provider] }
}
