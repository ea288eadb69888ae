public import Foundation
public import PayhookCore

/// Mercado Pago's API: `GET /v1/orders/{id}` and `GET /v1/payments/{id}` with a Bearer
/// access token, and `POST /v1/orders` to charge a stored card (Automatic Payments).
///
/// Mercado Pago webhooks are thin (an id and an action), so the processors fetch the state
/// through this client. The access token is sent only in the `Authorization` header and never
/// appears in errors, `description` or reflection.
///
/// Safe to share across tasks: it holds immutable values and an `HTTPClient`, which is itself
/// safe to call concurrently.
public struct MercadoPagoAPIClient: PaymentProviderClient, CustomStringConvertible, CustomReflectable {
    public var provider: ProviderID { .mercadopago }

    private let endpoint: ProviderAPIEndpoint
    private let accessToken: String
    private let currencies: MercadoPagoCurrencyOverrides

    /// - Parameters:
    ///   - baseURL: e.g. `https://api.mercadopago.com`, or the emulator's
    ///     `http://127.0.0.1:{port}/mercadopago`; paths are appended to it.
    ///   - accessToken: the application's access token (`APP_USR-…`).
    ///   - http: the transport; its deadline enforcement is what makes `timeout` hold.
    ///   - timeout: deadline for each call, waiting for a transport slot included.
    ///   - currencies: the configured currency of accounts whose orders name none.
    public init(baseURL: URL, accessToken: String, http: any HTTPClient, timeout: Duration = .seconds(10),
                currencies: MercadoPagoCurrencyOverrides = MercadoPagoCurrencyOverrides()) {
        self.endpoint = ProviderAPIEndpoint(baseURL: baseURL, http: http, timeout: timeout)
        self.accessToken = accessToken
        self.currencies = currencies
    }

    /// `GET /v1/orders/{id}`, decoded by ``MercadoPagoOrderDecoder``.
    /// - Throws: `ProviderAPIError`: `.notFound` (404 or an empty id), `.unauthorized`
    ///   (401/403), `.unavailable` (429, 5xx, connection), `.timeout`, `.invalidResponse`
    ///   (the body does not decode, or an unexpected status).
    public func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        try await fetchOrder(id: id, account: "")
    }

    /// `GET /v1/orders/{id}` for a route's account: an order without `currency` is decoded in
    /// the account's configured currency, else its site's (``MercadoPagoOrderDecoder``).
    /// - Throws: `ProviderAPIError`, as for ``fetchOrder(id:)``.
    public func fetchOrder(id: String, account: String) async throws(ProviderAPIError) -> OrderSnapshot {
        let operation = "mercadopago GET /v1/orders"
        let body = try await get("/v1/orders/", id: id, operation: operation)
        let override = currencies.currency(forAccount: account)
        return try ProviderAPIRequest.decoding(operation) { try MercadoPagoOrderDecoder.decode(body, currencyOverride: override) }
    }

    /// `GET /v1/payments/{id}` (a classic payment), decoded by ``MercadoPagoPaymentDecoder``.
    /// - Throws: `ProviderAPIError`, as for ``fetchOrder(id:)``.
    public func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        let operation = "mercadopago GET /v1/payments"
        let body = try await get("/v1/payments/", id: id, operation: operation)
        return try ProviderAPIRequest.decoding(operation) { try MercadoPagoPaymentDecoder.decode(body) }
    }

    /// `POST /v1/orders` with `X-Idempotency-Key`: a merchant-initiated charge of the customer's
    /// payment profile, as Mercado Pago's Automatic Payments second step describes it.
    ///
    /// The body: `type` `online`, `processing_mode` `automatic_async` (merchant-initiated; the
    /// customer-present first payment is `automatic`, and payhook never makes it),
    /// `external_reference`, `total_amount` (decimal string), `payer.customer_id`, and
    /// `transactions.payments[0]` with `amount`, `automatic_payments.payment_profile_id`, no
    /// `payment_method` (no card token: the profile holds the card), `stored_credential`
    /// (`payment_initiator` `merchant`, `reason` `recurring`, `first_payment` false,
    /// `previous_transaction_reference`: the id of the first payment, the customer-present one
    /// that registered the card, when payhook has seen it) and, with
    /// ``StoredCredential/billing``, a payment-level `subscription_data{invoice_id,
    /// billing_date, subscription_sequence{number, total}, invoice_period{type, period}}`.
    /// `invoice_period.type` is `daily`, `weekly` or `monthly` (only `monthly` appears in Mercado
    /// Pago's examples: the other two are UNCONFIRMED). Mercado Pago has no resubmission reason
    /// that we know of, so ``StoredCredential/Reason/resubmission`` is sent as `recurring` too.
    /// `currency` carries the amount's ISO 4217 code (Node SDK `CreateOrderRequest.currency`),
    /// and an answer that names another currency is refused as no result (the outcome stays
    /// unknown) rather than counted.
    ///
    /// A failed order is a result, not an error; see ``MercadoPagoChargeClassification``.
    /// Mercado Pago documents 402 for "order created but a transaction failed", the order as
    /// the body: it is classified like a 201. A 409 (`idempotency_key_already_used`: this key
    /// with another body) is an error, never a decline or a success.
    /// - Throws: `ProviderAPIError`: `.invalidResponse` before sending for a key outside 1–64
    ///   printable ASCII characters, an empty token, a missing `customerID` or an amount that
    ///   is not positive, and after sending for a 4xx or an answer that is not an order;
    ///   `.unauthorized`; `.timeout`/`.unavailable` (outcome unknown: retry with the same key).
    public func charge(
        storedCredential: StoredCredential, amount: Money, reference: String, idempotencyKey: String
    ) async throws(ProviderAPIError) -> ChargeResult {
        let operation = "mercadopago POST /v1/orders"
        try ProviderAPIRequest.checkIdempotencyKey(idempotencyKey, operation: operation)
        let token = try ProviderAPIRequest.checkRequired(storedCredential.token, field: "payment_profile_id (token)", operation: operation)
        let customer = try ProviderAPIRequest.checkRequired(storedCredential.customerID, field: "payer.customer_id", operation: operation)
        try ProviderAPIRequest.checkPositive(amount, operation: operation)
        let body = Self.chargeBody(
            token: token, customerID: customer, previousTransactionReference: storedCredential.previousTransactionReference,
            billing: storedCredential.billing, amount: amount, reference: reference)
        let answer = try await endpoint.send(
            operation, method: "POST", path: "/v1/orders",
            headers: [("Authorization", "Bearer \(accessToken)"), ("X-Idempotency-Key", idempotencyKey),
                      ("Content-Type", "application/json"), ("Accept", "application/json")],
            body: body.bytes, accepting: [402])
        return try ProviderAPIRequest.decoding(operation) {
            try MercadoPagoChargeClassification.result(orderJSON: answer, expectedCurrency: amount.currency)
        }
    }

    /// The order a charge created, by the order id `POST /v1/orders` returned:
    /// `GET /v1/orders/{id}`, classified by ``MercadoPagoChargeClassification`` (a pending order
    /// is looked up here, never through `GET /v1/payments`, which knows no order ids).
    ///
    /// Without `providerPaymentID`, ``ChargeLookup/unsupported`` and no network call: Mercado
    /// Pago cannot look an order up by `X-Idempotency-Key`. Within its idempotency window
    /// (`PAYHOOK_MERCADOPAGO_IDEMPOTENCY_WINDOW`) `POST /v1/orders` again with the same key and
    /// body returns the order the first request created without charging again.
    /// - Returns: ``ChargeLookup/found(_:)`` or ``ChargeLookup/unsupported``; never
    ///   ``ChargeLookup/notFound`` (an order id that came from Mercado Pago names an order).
    /// - Throws: `ProviderAPIError` as for ``fetchOrder(id:)``; `.notFound` for a 404, which
    ///   leaves the outcome unknown.
    public func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup {
        guard let orderID = providerPaymentID else { return .unsupported }
        let operation = "mercadopago GET /v1/orders"
        let body = try await get("/v1/orders/", id: orderID, operation: operation)
        return .found(try ProviderAPIRequest.decoding(operation) { try MercadoPagoChargeClassification.result(orderJSON: body) })
    }

    /// A card a merchant saved for a customer, as Mercado Pago knows it:
    /// `GET /v1/customers/{customer_id}/cards/{card_id}` (Node SDK `customerCard.get`), decoded
    /// by ``MercadoPagoCustomerCardDecoder``. What confirms a card id before payhook stores it.
    /// - Throws: `ProviderAPIError`: `.notFound` when Mercado Pago does not know the card for
    ///   that customer (404, or an empty id); otherwise as for ``fetchOrder(id:)``.
    public func fetchCustomerCard(customerID: String, cardID: String) async throws(ProviderAPIError) -> VaultTokenSnapshot {
        let operation = "mercadopago GET /v1/customers/{id}/cards"
        try ProviderAPIRequest.checkID(customerID, operation: operation)
        try ProviderAPIRequest.checkID(cardID, operation: operation)
        let body = try await get("/v1/customers/" + ProviderAPIRequest.pathSegment(customerID) + "/cards/", id: cardID,
                                 operation: operation)
        return try ProviderAPIRequest.decoding(operation) { try MercadoPagoCustomerCardDecoder.decode(body) }
    }

    /// A customer's payment profile, as Mercado Pago knows it:
    /// `GET /v1/customers/{customer_id}/payment-profiles/{payment_profile_id}` (reference "Query a
    /// specific payment profile"), decoded by ``MercadoPagoPaymentProfileDecoder``. What confirms
    /// a profile id before payhook stores it.
    /// - Throws: `ProviderAPIError`: `.notFound` when Mercado Pago does not know the profile for
    ///   that customer (404, or an empty id); a 400 (`customer_id_mismatch`, documented for a
    ///   profile of another customer) is `.invalidResponse`; otherwise as for ``fetchOrder(id:)``.
    public func fetchPaymentProfile(customerID: String, profileID: String) async throws(ProviderAPIError) -> MercadoPagoPaymentProfile {
        let operation = "mercadopago GET /v1/customers/{id}/payment-profiles"
        try ProviderAPIRequest.checkID(customerID, operation: operation)
        try ProviderAPIRequest.checkID(profileID, operation: operation)
        let body = try await get("/v1/customers/" + ProviderAPIRequest.pathSegment(customerID) + "/payment-profiles/",
                                 id: profileID, operation: operation)
        return try ProviderAPIRequest.decoding(operation) {
            try MercadoPagoPaymentProfileDecoder.decode(body, customerID: customerID)
        }
    }

    /// The order a charge created, found by the `external_reference` it was sent with when no
    /// answer gave its id (the create answer was lost): `GET /v1/orders?external_reference=…
    /// &begin_date=…&end_date=…`, the order search of the official Node SDK
    /// (`src/clients/order/search`), answered `{"data":[order, …],"paging":{…}}`.
    ///
    /// Every attempt of one cycle carries the same reference, and a later attempt is sent only
    /// after an earlier one was declined, hours or days before; so the search looks from five
    /// minutes before this attempt was first sent to a day after, and keeps the orders created
    /// in that span.
    /// - Returns: ``ChargeLookup/found(_:)`` for exactly one such order; ``ChargeLookup/notFound``
    ///   for none (the caller may then send the same key again, inside the idempotency window
    ///   only, where Mercado Pago replays an order it did create).
    /// - Throws: `ProviderAPIError` as for ``fetchOrder(id:)``; `.invalidResponse` when several
    ///   orders match (which one is this attempt's cannot be told: the outcome stays unknown).
    public func lookUpCharge(idempotencyKey: String, providerPaymentID: String?, reference: String,
                             sentAt: Date) async throws(ProviderAPIError) -> ChargeLookup {
        if providerPaymentID != nil {
            return try await lookUpCharge(idempotencyKey: idempotencyKey, providerPaymentID: providerPaymentID)
        }
        let operation = "mercadopago GET /v1/orders (search)"
        let begin = sentAt.addingTimeInterval(-300)
        let end = sentAt.addingTimeInterval(86_400)
        let query = "external_reference=" + ProviderAPIRequest.pathSegment(reference)
            + "&begin_date=" + ProviderAPIRequest.pathSegment(Self.searchDate(begin))
            + "&end_date=" + ProviderAPIRequest.pathSegment(Self.searchDate(end))
        let body = try await endpoint.send(
            operation, method: "GET", path: "/v1/orders?" + query,
            headers: [("Authorization", "Bearer \(accessToken)"), ("Accept", "application/json")])
        let matches = try ProviderAPIRequest.decoding(operation) { () throws(PayloadError) -> [PayloadNode] in
            let root = try PayloadNode.parse(body, provider: .mercadopago)
            return try root["data"].elements().filter { order in
                guard (try? order["external_reference"].string()) == reference else { return false }
                guard let created = order["created_date"].date() else { return true }
                return created >= begin && created <= end
            }
        }
        switch matches.count {
        case 0: return .notFound
        case 1: return .found(try ProviderAPIRequest.decoding(operation) { try MercadoPagoChargeClassification.result(order: matches[0]) })
        default:
            throw ProviderAPIError(.invalidResponse, "\(operation): \(matches.count) orders carry this charge's external_reference; the outcome stays unknown")
        }
    }

    /// `begin_date`/`end_date` of the order search: ISO 8601 in UTC, whole seconds.
    static func searchDate(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }

    /// The charge body, built from exact values; a function of its inputs only, so a retry
    /// sends the same bytes and Mercado Pago recognizes it as the same request.
    static func chargeBody(
        token: String, customerID: String, previousTransactionReference: String?, billing: RecurringBilling? = nil,
        amount: Money, reference: String
    ) -> JSONOutput {
        let total = amount.decimalString
        return .object(omittingAbsent: [
            ("type", .string("online")),
            ("processing_mode", .string("automatic_async")),
            ("external_reference", .string(reference)),
            ("total_amount", .string(total)),
            // The subscription's currency, never left to the account's default (Node SDK
            // CreateOrderRequest.currency, ISO 4217).
            ("currency", .string(amount.currency)),
            ("payer", .object(omittingAbsent: [("customer_id", .string(customerID))])),
            ("transactions", .object(omittingAbsent: [("payments", .array([.object(omittingAbsent: [
                ("amount", .string(total)),
                ("automatic_payments", .object(omittingAbsent: [("payment_profile_id", .string(token))])),
                ("stored_credential", .object(omittingAbsent: [
                    ("payment_initiator", .string("merchant")),
                    ("reason", .string("recurring")),
                    ("first_payment", .bool(false)),
                    ("previous_transaction_reference", previousTransactionReference.map(JSONOutput.string)),
                ])),
                ("subscription_data", billing.map(subscriptionData)),
            ])]))])),
        ])
    }

    /// Mercado Pago's `subscription_data` for one billing cycle.
    static func subscriptionData(_ billing: RecurringBilling) -> JSONOutput {
        let type = switch billing.unit {
        case .day: "daily"
        case .week: "weekly"
        case .month: "monthly"
        }
        return .object(omittingAbsent: [
            ("invoice_id", .string(billing.invoiceID)),
            ("billing_date", .string(billing.billingDate)),
            ("subscription_sequence", .object(omittingAbsent: [
                ("number", .number(String(billing.sequenceNumber))),
                ("total", billing.sequenceTotal.map { .number(String($0)) }),
            ])),
            ("invoice_period", .object(omittingAbsent: [("type", .string(type)), ("period", .number(String(billing.period)))])),
        ])
    }

    private func get(_ collection: String, id: String, operation: String) async throws(ProviderAPIError) -> [UInt8] {
        try ProviderAPIRequest.checkID(id, operation: operation)
        return try await endpoint.send(
            operation, method: "GET", path: collection + ProviderAPIRequest.pathSegment(id),
            headers: [("Authorization", "Bearer \(accessToken)"), ("Accept", "application/json")])
    }

    /// Names the provider and base URL only; the access token is never rendered.
    public var description: String { "MercadoPagoAPIClient(\(endpoint.baseURL.absoluteString))" }

    /// Empty, so `dump` and `String(reflecting:)` cannot reveal the access token.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
