public import Foundation
public import PayhookCore

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

    /// The order as the named account sees it: the same call, for providers whose answers
    /// need an account setting to decode (Mercado Pago: the account's currency when an order
    /// names none). Defaults to ``fetchOrder(id:)``.
    /// - Parameter account: the route's account (`""` for the provider's default route).
    func fetchOrder(id: String, account: String) async throws(ProviderAPIError) -> OrderSnapshot

    /// One payment or transaction, e.g. Mercado Pago `GET /v1/payments/{id}` or PXP
    /// `GET /transactions/{merchant}/{site}?systemTransactionId=…`.
    func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot

    /// Charges a stored credential (merchant-initiated). Throws ProviderAPIError; .timeout/.unavailable
    /// mean the outcome is UNKNOWN: the caller looks the charge up (``lookUpCharge(idempotencyKey:providerPaymentID:)``) or retries with the SAME idempotency key.
    ///
    /// A decline is a result, not an error: ``ChargeResult/outcome`` says whether it is soft or
    /// hard. Errors are for charges that have no answer: `.timeout` and `.unavailable` (retry
    /// with the same key, after ``lookUpCharge(idempotencyKey:providerPaymentID:)``), `.unauthorized` (configuration),
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

    /// What the provider knows of the charge made earlier with this idempotency key: asked
    /// before any resend of a charge whose outcome is unknown or pending, so a key the provider
    /// may have forgotten is never the only thing between the shopper and a second charge.
    /// - Parameters:
    ///   - idempotencyKey: the key the charge was sent with (PXP: its `merchantTransactionId`).
    ///   - providerPaymentID: the provider's id of the charge when an earlier answer carried one
    ///     (Mercado Pago: the order id `POST /v1/orders` returned), else nil.
    /// - Returns: ``ChargeLookup/found(_:)`` with the charge's outcome; ``ChargeLookup/notFound``
    ///   only for a well-formed answer that lists no such charge (it was never executed);
    ///   ``ChargeLookup/unsupported``, without a network call, where the provider cannot be asked.
    /// - Throws: `ProviderAPIError` for any other answer (a 404 of the route itself, a 5xx, a
    ///   timeout, an answer that does not decode): the outcome stays unknown and nothing may be
    ///   re-sent on it.
    func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup

    /// The same look-up, for providers that can also find a charge by the merchant reference
    /// it was sent with (Mercado Pago's order search by `external_reference`), when no answer
    /// gave its id. Defaults to ``lookUpCharge(idempotencyKey:providerPaymentID:)``.
    /// - Parameters:
    ///   - reference: the charge's merchant reference (`external_reference`).
    ///   - sentAt: when the charge was first sent; the search looks around it.
    func lookUpCharge(idempotencyKey: String, providerPaymentID: String?, reference: String,
                      sentAt: Date) async throws(ProviderAPIError) -> ChargeLookup
}

extension PaymentProviderClient {
    public func fetchOrder(id: String, account: String) async throws(ProviderAPIError) -> OrderSnapshot {
        try await fetchOrder(id: id)
    }

    public func lookUpCharge(idempotencyKey: String, providerPaymentID: String?, reference: String,
                             sentAt: Date) async throws(ProviderAPIError) -> ChargeLookup {
        try await lookUpCharge(idempotencyKey: idempotencyKey, providerPaymentID: providerPaymentID)
    }
}

/// What a provider says of a charge made earlier (``PaymentProviderClient/lookUpCharge(idempotencyKey:providerPaymentID:)``).
public enum ChargeLookup: Sendable, Hashable {
    /// The provider has the charge; this is its outcome (possibly still pending).
    case found(ChargeResult)
    /// A well-formed answer listing no charge with this key: it was never executed.
    case notFound
    /// The provider cannot be asked (no lookup by this key); nothing was sent.
    case unsupported
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
