import Foundation
import PayhookCore
import PayhookHTTP

/// Adyen's Checkout API, as far as payhook fetches state from it: not at all.
///
/// Checkout has no endpoint that returns a payment by `pspReference`, and Adyen has no order
/// resource comparable to Mercado Pago's. Adyen webhooks are self-contained instead: every
/// notification item carries the amount, the event code and its outcome, and is HMAC-signed, so
/// the verified webhook is the authoritative state. Both fetches therefore throw `.unsupported`
/// without a network call; callers treat that as "trust the verified webhook".
///
/// The credentials are kept for `POST /v72/payments` (charging a stored token), which is sent
/// with `X-API-Key` and an `Idempotency-Key`. The API key never appears in errors,
/// `description` or reflection.
public struct AdyenAPIClient: PaymentProviderClient, CustomStringConvertible, CustomReflectable {
    public var provider: ProviderID { .adyen }

    private let baseURL: URL
    private let apiKey: String
    private let merchantAccount: String
    private let http: any HTTPClient
    private let timeout: Duration

    /// - Parameters:
    ///   - baseURL: the Checkout base, e.g. `https://checkout-test.adyen.com` (live URLs carry
    ///     a merchant-specific prefix), or the emulator's `http://127.0.0.1:{port}/adyen`;
    ///     versioned paths such as `/v72/payments` are appended to it.
    ///   - apiKey: the web service user's API key, sent as `X-API-Key`.
    ///   - merchantAccount: the merchant account code sent in request bodies.
    ///   - http: the transport.
    ///   - timeout: deadline for each call.
    public init(
        baseURL: URL, apiKey: String, merchantAccount: String, http: any HTTPClient,
        timeout: Duration = .seconds(10)
    ) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.merchantAccount = merchantAccount
        self.http = http
        self.timeout = timeout
    }

    /// Always throws `.unsupported`: Adyen has no order resource to fetch.
    public func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        throw ProviderAPIError(.unsupported, "adyen: no order resource; the verified webhook is authoritative")
    }

    /// Always throws `.unsupported`: Checkout cannot fetch a payment by `pspReference`.
    public func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        throw ProviderAPIError(.unsupported, "adyen: no payment lookup by pspReference; the verified webhook is authoritative")
    }

    /// Names the provider, base URL and merchant account; the API key is never rendered.
    public var description: String { "AdyenAPIClient(\(baseURL.absoluteString), \(merchantAccount))" }

    /// Empty, so `dump` and `String(reflecting:)` cannot reveal the API key.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
