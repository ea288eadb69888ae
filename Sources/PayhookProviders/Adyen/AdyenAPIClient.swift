public import Foundation
public import PayhookCore

/// Adyen's Checkout API: `POST /v72/payments` to charge a stored token; nothing to fetch.
///
/// Checkout has no endpoint that returns a payment by `pspReference`, and Adyen has no order
/// resource comparable to Mercado Pago's. Adyen webhooks are self-contained instead: every
/// notification item carries the amount, the event code and its outcome, and is HMAC-signed, so
/// the verified webhook is the authoritative state. Both fetches therefore throw `.unsupported`
/// without a network call; callers treat that as "trust the verified webhook".
///
/// Charges (`POST /v72/payments`) are sent with `X-API-Key` and an `Idempotency-Key`. The API
/// key never appears in errors, `description` or reflection.
public struct AdyenAPIClient: PaymentProviderClient, CustomStringConvertible, CustomReflectable {
    public var provider: ProviderID { .adyen }

    private let endpoint: ProviderAPIEndpoint
    private let apiKey: String
    private let merchantAccount: String
    private let returnURL: String

    /// Sent when `PAYHOOK_ADYEN_RETURN_URL` is not set. Checkout's `/payments` marks
    /// `returnUrl` required, and no source we found says a `ContAuth` charge may leave it out
    /// (docs/providers.md). A merchant-initiated charge has no shopper to send back, so the
    /// address is never visited; `.invalid` (RFC 2606) makes that plain and can never resolve.
    public static let defaultReturnURL = "https://payhook.invalid/adyen/return"

    /// - Parameters:
    ///   - baseURL: the Checkout base, e.g. `https://checkout-test.adyen.com` (live URLs carry
    ///     a merchant-specific prefix), or the emulator's `http://127.0.0.1:{port}/adyen`;
    ///     versioned paths such as `/v72/payments` are appended to it.
    ///   - apiKey: the web service user's API key, sent as `X-API-Key`.
    ///   - merchantAccount: the merchant account code sent in request bodies.
    ///   - http: the transport.
    ///   - timeout: deadline for each call.
    ///   - returnURL: the `returnUrl` every charge sends (``defaultReturnURL`` unless configured).
    public init(
        baseURL: URL, apiKey: String, merchantAccount: String, http: any HTTPClient,
        timeout: Duration = .seconds(10), returnURL: String = AdyenAPIClient.defaultReturnURL
    ) {
        self.endpoint = ProviderAPIEndpoint(baseURL: baseURL, http: http, timeout: timeout)
        self.apiKey = apiKey
        self.merchantAccount = merchantAccount
        self.returnURL = returnURL
    }

    /// Always throws `.unsupported`: Adyen has no order resource to fetch.
    public func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        throw ProviderAPIError(.unsupported, "adyen: no order resource; the verified webhook is authoritative")
    }

    /// Always throws `.unsupported`: Checkout cannot fetch a payment by `pspReference`.
    public func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        throw ProviderAPIError(.unsupported, "adyen: no payment lookup by pspReference; the verified webhook is authoritative")
    }

    /// `POST /v72/payments` with `Idempotency-Key`: a merchant-initiated subscription charge of
    /// a stored card.
    ///
    /// The body: `amount{currency, value}` (minor units), `merchantAccount`, `reference`,
    /// `paymentMethod{type: "scheme", storedPaymentMethodId}`, `shopperReference`,
    /// `shopperInteraction` `ContAuth`, `recurringProcessingModel` `Subscription`, `returnUrl`
    /// (required by the Checkout API spec; see ``defaultReturnURL``). Adyen
    /// answers 200 for refusals too; the result code decides (see ``AdyenChargeClassification``).
    /// ``StoredCredential/previousTransactionReference`` is not sent: Adyen links the
    /// subscription through the stored token itself.
    /// - Throws: `ProviderAPIError`: `.invalidResponse` before sending for a key outside 1–64
    ///   printable ASCII characters, an empty token, a missing `shopperReference` or an amount
    ///   that is not positive, and after sending for a 4xx (422 validation, e.g. an unknown
    ///   token) or an answer without `resultCode`; `.unauthorized` (401/403, including a wrong
    ///   merchant account); `.timeout`/`.unavailable` (outcome unknown: retry with the same key).
    public func charge(
        storedCredential: StoredCredential, amount: Money, reference: String, idempotencyKey: String
    ) async throws(ProviderAPIError) -> ChargeResult {
        let operation = "adyen POST /v72/payments"
        try ProviderAPIRequest.checkIdempotencyKey(idempotencyKey, operation: operation)
        let token = try ProviderAPIRequest.checkRequired(storedCredential.token, field: "storedPaymentMethodId (token)", operation: operation)
        let shopper = try ProviderAPIRequest.checkRequired(storedCredential.shopperReference, field: "shopperReference", operation: operation)
        try ProviderAPIRequest.checkPositive(amount, operation: operation)
        let body = try Self.chargeBody(
            token: token, shopperReference: shopper, amount: amount, reference: reference, merchantAccount: merchantAccount,
            returnURL: returnURL, operation: operation)
        let answer = try await endpoint.send(
            operation, method: "POST", path: "/v72/payments",
            headers: [("X-API-Key", apiKey), ("Idempotency-Key", idempotencyKey),
                      ("Content-Type", "application/json"), ("Accept", "application/json")],
            body: body.bytes)
        return try ProviderAPIRequest.decoding(operation) { try AdyenChargeClassification.result(paymentJSON: answer) }
    }

    /// The tokens Adyen stores for a shopper: Checkout `GET /v72/storedPaymentMethods?
    /// shopperReference=…&merchantAccount=…` (official Node library `RecurringApi.
    /// getTokensForStoredPaymentDetails`, `src/services/checkout/recurringApi.ts`; answer
    /// `ListStoredPaymentMethodsResponse{merchantAccount, shopperReference, storedPaymentMethods[]}`
    /// of `StoredPaymentMethodResource`s). What confirms an Adyen token before payhook stores it.
    /// - Throws: `ProviderAPIError` as for ``charge(storedCredential:amount:reference:idempotencyKey:)``;
    ///   a shopper Adyen stores nothing for is an empty list, not an error.
    public func storedPaymentMethods(shopperReference: String) async throws(ProviderAPIError) -> [AdyenStoredPaymentMethod] {
        let operation = "adyen GET /v72/storedPaymentMethods"
        try ProviderAPIRequest.checkID(shopperReference, operation: operation)
        let query = "?shopperReference=" + ProviderAPIRequest.pathSegment(shopperReference)
            + "&merchantAccount=" + ProviderAPIRequest.pathSegment(merchantAccount)
        let answer = try await endpoint.send(
            operation, method: "GET", path: "/v72/storedPaymentMethods" + query,
            headers: [("X-API-Key", apiKey), ("Accept", "application/json")])
        return try ProviderAPIRequest.decoding(operation) { try AdyenStoredPaymentMethod.decodeList(answer, merchantAccount: merchantAccount) }
    }

    /// Always ``ChargeLookup/unsupported``, without a network call. Checkout cannot look a
    /// payment up by `Idempotency-Key` (or by `pspReference`). Adyen keeps a key's answer for a
    /// limited time (`PAYHOOK_ADYEN_IDEMPOTENCY_WINDOW`) and replays it to a request with the same
    /// key without charging again, so within that window a caller with an unknown outcome
    /// retries ``charge(storedCredential:amount:reference:idempotencyKey:)`` with the same key;
    /// after it, only the `AUTHORISATION` webhook (or an operator) can settle the charge.
    public func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup {
        .unsupported
    }

    /// The charge body; a function of its inputs only, so a retry sends the same bytes.
    ///
    /// `amount.value` is in Adyen's minor units (``AdyenCurrency``): a CLP 1000 subscription
    /// (ISO 0 decimals) is sent as `100000`, a CVE 12.00 one (ISO 2, Adyen 0) as `12`.
    /// - Throws: `.invalidResponse` before sending for an amount Adyen cannot express exactly
    ///   (CVE 12.50) or a currency Adyen's table does not list; nothing is rounded.
    static func chargeBody(
        token: String, shopperReference: String, amount: Money, reference: String, merchantAccount: String,
        returnURL: String = AdyenAPIClient.defaultReturnURL, operation: String = "adyen POST /v72/payments"
    ) throws(ProviderAPIError) -> JSONOutput {
        let value: Int64
        do {
            value = try AdyenCurrency.adyenValue(of: amount)
        } catch {
            throw ProviderAPIError(.invalidResponse, "\(operation): \(error); not sent")
        }
        return .object(omittingAbsent: [
            ("amount", .object(omittingAbsent: [("currency", .string(amount.currency)), ("value", .number(String(value)))])),
            ("merchantAccount", .string(merchantAccount)),
            ("reference", .string(reference)),
            ("paymentMethod", .object(omittingAbsent: [("type", .string("scheme")), ("storedPaymentMethodId", .string(token))])),
            ("shopperReference", .string(shopperReference)),
            ("shopperInteraction", .string("ContAuth")),
            ("recurringProcessingModel", .string("Subscription")),
            ("returnUrl", .string(returnURL)),
        ])
    }

    /// Names the provider, base URL and merchant account; the API key is never rendered.
    public var description: String { "AdyenAPIClient(\(endpoint.baseURL.absoluteString), \(merchantAccount))" }

    /// Empty, so `dump` and `String(reflecting:)` cannot reveal the API key.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
