public import Foundation
public import PayhookCore

/// PXP Unity's transactions API: charges with `POST {base}/transactions`, and lookups with
/// `GET {base}/transactions/{merchant}/{site}?systemTransactionId=…` or
/// `?merchantTransactionId=…` (the charge made with an idempotency key).
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

    private let endpoint: ProviderAPIEndpoint
    private let clientID: String
    private let tokenID: String
    private let tokenValue: String
    private let merchant: String
    private let site: String
    private let now: @Sendable () -> Date
    private let makeRequestID: @Sendable () -> String
    private let chargeClassification: PXPChargeClassification

    /// - Parameters:
    ///   - baseURL: the API base including its version path, e.g.
    ///     `https://api-services.pxp.io/api/v1` (sandbox `https://api-services.test.pxp.io/api/v1`),
    ///     or the emulator's `http://127.0.0.1:{port}/pxp/api/v1`.
    ///   - clientID: sent as `X-Client-Id`.
    ///   - tokenID: the token's id, first part of the `Authorization` credential.
    ///   - tokenValue: the token's secret, used only as the HMAC key.
    ///   - merchant: merchant code, sent in charge requests and in the lookup path.
    ///   - site: site code, sent in charge requests and in the lookup path.
    ///   - http: the transport.
    ///   - timeout: deadline for each call.
    ///   - now: the clock for the signed timestamp; injected by tests.
    ///   - makeRequestID: `X-Request-Id` for each request, a fresh lowercase UUID by default.
    ///   - chargeClassification: which refusal codes are soft (UNCONFIRMED defaults; see
    ///     ``PXPChargeClassification``).
    public init(
        baseURL: URL, clientID: String, tokenID: String, tokenValue: String, merchant: String, site: String,
        http: any HTTPClient, timeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> Date = { Date() },
        makeRequestID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() },
        chargeClassification: PXPChargeClassification = .standard
    ) {
        self.endpoint = ProviderAPIEndpoint(baseURL: baseURL, http: http, timeout: timeout)
        self.clientID = clientID
        self.tokenID = tokenID
        self.tokenValue = tokenValue
        self.merchant = merchant
        self.site = site
        self.now = now
        self.makeRequestID = makeRequestID
        self.chargeClassification = chargeClassification
    }

    /// Always throws `.unsupported`: PXP has transactions, not orders.
    public func fetchOrder(id: String) async throws(ProviderAPIError) -> OrderSnapshot {
        throw ProviderAPIError(.unsupported, "pxp: no order resource; fetch the transaction")
    }

    /// `GET {base}/transactions/{merchant}/{site}?systemTransactionId={id}`, decoded by
    /// ``PXPTransactionDecoder``.
    /// - Parameter id: the `systemTransactionId` from the webhook or the charge response.
    /// - Throws: `ProviderAPIError`: `.notFound` (an empty id, or a well-formed empty list),
    ///   `.invalidResponse` (a 404, which PXP does not document as "no such transaction", or any
    ///   answer that is not this transaction), `.unauthorized` (401/403), `.unavailable` (429,
    ///   5xx, connection), `.timeout`.
    public func fetchPayment(id: String) async throws(ProviderAPIError) -> PaymentSnapshot {
        let operation = "pxp GET /transactions/{merchant}/{site}?systemTransactionId"
        try ProviderAPIRequest.checkID(id, operation: operation)
        let matches = try await lookUp(field: "systemTransactionId", value: id, operation: operation)
        guard let match = matches.first else {
            throw ProviderAPIError(.notFound, "\(operation): no such transaction")
        }
        return try ProviderAPIRequest.decoding(operation) { try PXPTransactionDecoder.decode(match) }
    }

    /// `POST {base}/transactions`: a merchant-initiated card-on-file purchase whose
    /// `merchantTransactionId` is the idempotency key.
    ///
    /// The body: `merchant`, `site`, `merchantTransactionId`, `merchantTransactionDate` (now,
    /// ISO 8601), `transactionMethod{intent: "Purchase", entryType: "Ecom", fundingType: "Card"}`,
    /// `amounts{transaction, currencyCode}` (the amount as an exact JSON number in major units;
    /// answers call it `transactionValue`), the stored card, `shopper.id` when known, and the
    /// processing model: `MerchantInitiatedSubsequentRecurring` for every scheduled charge (the
    /// first included: `MerchantInitiatedInitialRecurring` is the setup that saved the card,
    /// made before payhook), `MerchantInitiatedResubmission` for ``StoredCredential/Reason/resubmission``. Where the card and the model go is UNCONFIRMED
    /// and kept in ``PXPUnconfirmedFields``.
    ///
    /// Whether PXP replays or rejects a second request with the same `merchantTransactionId`
    /// is UNCONFIRMED, so after `.timeout`/`.unavailable` call ``lookUpCharge(idempotencyKey:providerPaymentID:)``
    /// first and charge again (same key) only when it returns ``ChargeLookup/notFound``.
    /// - Parameter reference: not sent; PXP identifies the charge by `merchantTransactionId`.
    /// - Throws: `ProviderAPIError`: `.invalidResponse` before sending for a key outside 1–50
    ///   printable ASCII characters (PXP's `merchantTransactionId` limit), an empty token or an
    ///   amount that is not positive, and after sending for a 4xx or an answer without
    ///   `systemTransactionId`/`state` or with a state outside PXP's enum;
    ///   `.unauthorized`; `.timeout`/`.unavailable` (outcome unknown).
    public func charge(
        storedCredential: StoredCredential, amount: Money, reference: String, idempotencyKey: String
    ) async throws(ProviderAPIError) -> ChargeResult {
        let operation = "pxp POST /transactions"
        try ProviderAPIRequest.checkIdempotencyKey(idempotencyKey, operation: operation, maxLength: Self.maxMerchantTransactionIDLength)
        _ = try ProviderAPIRequest.checkRequired(storedCredential.token, field: "card-on-file token", operation: operation)
        try ProviderAPIRequest.checkPositive(amount, operation: operation)
        let body = Self.chargeBody(
            merchant: merchant, site: site, merchantTransactionID: idempotencyKey, date: now(),
            credential: storedCredential, amount: amount)
        let answer = try await send(method: "POST", path: "/transactions", body: body.bytes, operation: operation)
        return try ProviderAPIRequest.decoding(operation) { try chargeClassification.result(PayloadNode.parse(answer, provider: .pxp)) }
    }

    /// `GET {base}/transactions/{merchant}/{site}?merchantTransactionId={key}`: the charge made
    /// with this key.
    ///
    /// Only a well-formed answer that lists no transaction with this `merchantTransactionId`
    /// is ``ChargeLookup/notFound`` (see ``lookUp(field:value:operation:)`` for the shapes read).
    /// If several match, an approved one wins (so a charge is never repeated), else the first.
    /// - Returns: ``ChargeLookup/found(_:)`` or ``ChargeLookup/notFound``; never
    ///   ``ChargeLookup/unsupported``.
    /// - Throws: `ProviderAPIError`, and then the outcome stays unknown and nothing may be
    ///   re-sent: `.invalidResponse` for an invalid key, a 404 of the route or an answer that is
    ///   not a list of transactions; `.unauthorized`, `.timeout`, `.unavailable`.
    public func lookUpCharge(idempotencyKey: String, providerPaymentID: String?) async throws(ProviderAPIError) -> ChargeLookup {
        let operation = "pxp GET /transactions/{merchant}/{site}?merchantTransactionId"
        try ProviderAPIRequest.checkIdempotencyKey(idempotencyKey, operation: operation)
        let matches = try await lookUp(field: "merchantTransactionId", value: idempotencyKey, operation: operation)
        let results = try ProviderAPIRequest.decoding(operation) {
            try matches.map { node throws(PayloadError) in try chargeClassification.result(node) }
        }
        return (results.first { $0.outcome == .succeeded } ?? results.first).map(ChargeLookup.found) ?? .notFound
    }

    /// `GET {base}/transactions/{merchant}/{site}?{field}={value}`, PXP's documented lookup, and
    /// the transactions of the answer whose `field` equals `value`.
    ///
    /// PXP's reference answers one transaction object
    /// (https://developer.pxp.io/guides/transactions/get-transaction-details); the answer is
    /// still read defensively: also a JSON array of transactions, or an object holding them under
    /// `transactions`, `items` or `data`. PXP documents no answer for "no such transaction"
    /// (UNCONFIRMED), so only a well-formed empty list would mean "none". A list whose entries
    /// all name another transaction, an object that is not a transaction, and every 404 (a
    /// route that does not exist, or a transaction not yet visible, looks the same as a missing
    /// one) are unknown outcomes, thrown as `.invalidResponse`: a charge stays unknown until its
    /// webhook or an operator settles it, never re-sent on a guess. The signature covers the
    /// path without the query, as ``PXPRequestSigner`` states.
    func lookUp(field: String, value: String, operation: String) async throws(ProviderAPIError) -> [PayloadNode] {
        let path = "/transactions/" + ProviderAPIRequest.pathSegment(merchant) + "/" + ProviderAPIRequest.pathSegment(site)
        let answer: [UInt8]
        do {
            answer = try await send(
                method: "GET", path: path, query: field + "=" + ProviderAPIRequest.pathSegment(value), body: [],
                operation: operation)
        } catch where error.kind == .notFound {
            throw ProviderAPIError(.invalidResponse, "\(operation): HTTP 404, not read as \"no such transaction\"; outcome unknown")
        }
        return try ProviderAPIRequest.decoding(operation) {
            // An array is a valid answer here, which PayloadNode.parse (objects only) refuses.
            guard let parsed = JSONValue.parse(answer) else { throw PayloadError(provider: .pxp, code: .malformedJSON) }
            let root = PayloadNode(value: parsed, path: "", provider: .pxp)
            let candidates: [PayloadNode]
            if case .array? = root.value {
                candidates = try root.elements()
            } else if let list = PayloadNode.firstPresent(root["transactions"], root["items"], root["data"]) {
                candidates = try list.elements()
            } else {
                _ = try root["state"].requiredString()
                candidates = [root]
            }
            if candidates.isEmpty { return [] }
            let matches = try candidates.filter { node throws(PayloadError) in try node[field].string() == value }
            guard !matches.isEmpty else { throw root.error(.unrecognizedValue) }
            return matches
        }
    }

    /// PXP's limit for `merchantTransactionId`, the idempotency key of a charge.
    public static let maxMerchantTransactionIDLength = 50

    /// `2025-05-20T08:51:02.826Z`, UTC, rounded to the millisecond. Formatted by hand: creating
    /// an `ISO8601DateFormatter` per charge (ICU underneath) was a measurable share of a charge's
    /// CPU in bench/charges.
    static func transactionDate(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(millis.quotientAndRemainder(dividingBy: 1000).quotient - (millis < 0 && millis % 1000 != 0 ? 1 : 0))
        let fraction = Int32(((millis % 1000) + 1000) % 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, fraction)
    }

    /// The charge body. Everything but `date` is a function of the charge, so a retry differs
    /// only in `merchantTransactionDate`.
    static func chargeBody(
        merchant: String, site: String, merchantTransactionID: String, date: Date, credential: StoredCredential, amount: Money
    ) -> JSONOutput {
        .object(omittingAbsent: [
            ("merchant", .string(merchant)),
            ("site", .string(site)),
            ("merchantTransactionId", .string(merchantTransactionID)),
            ("merchantTransactionDate", .string(Self.transactionDate(date))),
            ("transactionMethod", .object(omittingAbsent: [
                ("intent", .string("Purchase")), ("entryType", .string("Ecom")), ("fundingType", .string("Card")),
            ])),
            // The request names the amount `transaction`; answers name it `transactionValue`.
            ("amounts", .object(omittingAbsent: [("transaction", .number(amount.decimalString)), ("currencyCode", .string(amount.currency))])),
            PXPUnconfirmedFields.storedCard(credential),
            ("shopper", credential.shopperReference.map { .object(omittingAbsent: [("id", .string($0))]) }),
            PXPUnconfirmedFields.recurring(credential),
        ])
    }

    /// Signs and sends one request; `path` is relative to the base URL and already escaped, as
    /// is `query` (without `?`, not signed).
    private func send(
        method: String, path: String, query: String? = nil, body: [UInt8], operation: String
    ) async throws(ProviderAPIError) -> [UInt8] {
        let timestamp = String(Int64(now().timeIntervalSince1970.rounded(.down)))
        let requestID = makeRequestID()
        // The signature covers the path as it goes on the wire, base path included, so the
        // same request verifies whether PXP sits at the host root or behind a prefix.
        let signature = PXPRequestSigner.signature(
            tokenValue: tokenValue, timestamp: timestamp, requestID: requestID, method: method,
            path: ProviderAPIRequest.basePath(endpoint.baseURL) + path, body: body)
        var headers: [(String, String)] = [
            ("Authorization", PXPRequestSigner.authorization(tokenID: tokenID, timestamp: timestamp, signature: signature)),
            ("X-Request-Id", requestID),
            ("X-Client-Id", clientID),
            ("Accept", "application/json"),
        ]
        if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
        return try await endpoint.send(
            operation, method: method, path: path + (query.map { "?" + $0 } ?? ""), headers: headers, body: body)
    }

    /// Names the provider, base URL, merchant and site; the token value is never rendered.
    public var description: String { "PXPAPIClient(\(endpoint.baseURL.absoluteString), \(merchant)/\(site))" }

    /// Empty, so `dump` and `String(reflecting:)` cannot reveal the token value.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
