import PayhookCore

/// A provider's HTTP API as payhook uses it: fetching authoritative state when a webhook is
/// thin or must be confirmed, and charging stored credentials.
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

    /// Charges a stored credential (merchant-initiated). Throws ProviderAPIError; .timeout/.unavailable
    /// mean the outcome is UNKNOWN: the caller retries with the SAME idempotency key or calls findCharge.
    ///
    /// A decline is a result, not an error: ``ChargeResult/outcome`` says whether it is soft or
    /// hard. Errors are for charges that have no answer: `.timeout` and `.unavailable` (retry
    /// with the same key, or ``findCharge(idempotencyKey:)``), `.unauthorized` (configuration),
    /// `.invalidResponse` (the request was refused as malformed, by the provider with a 4xx or
    /// by the client before sending, e.g. an idempotency key over 64 characters; or the answer
    /// did not decode). Only `.timeout`/`.unavailable` are retryable.
    /// - Parameters:
    ///   - storedCredential: the token and the provider's companion fields.
    ///   - amount: exact, in minor units.
    ///   - reference: the merchant's reference of this charge (Mercado Pago
    ///     `external_reference`, Adyen `reference`); PXP uses the idempotency key instead.
    ///   - idempotencyKey: 1 to 64 characters, the same for every retry of this charge; PXP's
    ///     `merchantTransactionId`.
    func charge(storedCredential: StoredCredential, amount: Money, reference: String,
                idempotencyKey: String) async throws(ProviderAPIError) -> ChargeResult

    /// The charge made earlier with this idempotency key, if the provider can look it up (PXP: by
    /// merchantTransactionId); nil when not found. Providers whose replay with the same key is safe
    /// and that have no lookup (Adyen, Mercado Pago) return nil without a network call — document why.
    func findCharge(idempotencyKey: String) async throws(ProviderAPIError) -> ChargeResult?
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
        /// The answer could not be decoded, or the request was refused as malformed: by the
        /// provider (400, 409, 422) or by the client before sending (an idempotency key over
        /// 64 characters, a required credential field missing). The same request would fail
        /// the same way, so it is not retried.
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
