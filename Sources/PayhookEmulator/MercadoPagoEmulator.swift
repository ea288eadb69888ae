import Foundation
import PayhookCore
import PayhookHTTP
import Synchronization

/// Mercado Pago's API as the emulator serves it under `/mercadopago`.
///
/// - `GET /v1/orders?external_reference=…`: the order search, see ``searchOrders(_:orders:)``.
/// - `GET /v1/customers/{customer_id}/cards/{card_id}`: a saved card seeded with
///   ``putCustomerCard(customerID:cardID:json:)``; 404 for one it does not hold.
/// - `GET /v1/customers/{customer_id}/payment-profiles/{payment_profile_id}`: a payment profile
///   seeded with ``putPaymentProfile(customerID:profileID:json:)``; 400 `customer_id_mismatch`
///   (documented) for a profile of another customer, 404 for one it does not hold.
/// - `GET /v1/orders/{id}` and `GET /v1/payments/{id}`: the JSON seeded with
///   ``putOrder(id:json:)`` / ``putPayment(id:json:)`` (or created by a charge), byte for byte.
/// - `POST /v1/orders`: a charge. Requires `X-Idempotency-Key` (1–64 characters). The first
///   request with a key executes: it creates an order whose state follows the scripted
///   ``EmulatedChargeResult`` (approved → `processed`/`accredited`, pending →
///   `processing`/`in_process`, declined → `failed`/code, error → `failed`/`processing_error`),
///   stores it for `GET`, and answers with it: 201, or 402 for a failed order (documented as
///   "order created but a transaction failed"). The same key and body again replays that
///   answer without executing; the same key with a different body answers 409
///   (`idempotency_key_already_used`, documented for 24 h).
///
/// A charge the real API would refuse is refused with a 400 before anything executes: see
/// ``orderRequestProblem(_:knownOrder:)`` for the checks (processing mode, stored credential,
/// `subscription_data`). Every request needs `Authorization: Bearer {accessToken}`, else 401.
/// Error bodies follow Mercado Pago's `{"message","error","status","cause"}` shape. Safe to use from any thread.
public final class MercadoPagoEmulator: ChargeControls {
    /// The endpoints faults and counters refer to.
    public enum Endpoint: String, Sendable, CaseIterable {
        /// `GET /v1/orders/{id}`; resource id = order id.
        case order
        /// `GET /v1/payments/{id}`; resource id = payment id.
        case payment
        /// `POST /v1/orders`; resource id = the `X-Idempotency-Key`.
        case createOrder
        /// `GET /v1/orders?external_reference=…&begin_date=…&end_date=…`; resource id = the
        /// external reference.
        case searchOrders
        /// `GET /v1/customers/{customer_id}/cards/{card_id}`; resource id = `{customer_id}/{card_id}`.
        case customerCard
        /// `GET /v1/customers/{customer_id}/payment-profiles/{id}`; resource id = `{customer_id}/{id}`.
        case paymentProfile
    }

    private struct State {
        var orders: [String: [UInt8]] = [:]
        var payments: [String: [UInt8]] = [:]
        /// Saved cards by `{customer_id}/{card_id}`.
        var customerCards: [String: [UInt8]] = [:]
        /// Payment profiles by profile id, with the customer each belongs to.
        var paymentProfiles: [String: (customerID: String, body: [UInt8])] = [:]
        var faults = FaultPlan()
        var book = ChargeBook()
    }

    /// The access token requests must present.
    public let accessToken: String
    /// Currency of orders created by charges (an account's site currency in the real API).
    public let currency: String
    /// `country_code` of created orders: the site, which is all the published answers say of
    /// the currency.
    public let countryCode: String
    /// Whether created orders also carry `currency` (not in the documented answers).
    public let answersWithCurrency: Bool
    /// `user_id` of orders created by charges: the collector account.
    public let userID: String
    private let state = Mutex(State())
    private let log: RequestLog

    init(accessToken: String, currency: String, countryCode: String, answersWithCurrency: Bool, userID: String, log: RequestLog) {
        self.accessToken = accessToken
        self.currency = currency
        self.countryCode = countryCode
        self.answersWithCurrency = answersWithCurrency
        self.userID = userID
        self.log = log
    }

    /// Seeds (or replaces) the order served at `GET /v1/orders/{id}`.
    public func putOrder(id: String, json: [UInt8]) { state.withLock { $0.orders[id] = json } }

    /// Seeds (or replaces) the order served at `GET /v1/orders/{id}`.
    public func putOrder(id: String, json: String) { putOrder(id: id, json: Array(json.utf8)) }

    /// Seeds (or replaces) the payment served at `GET /v1/payments/{id}`.
    public func putPayment(id: String, json: [UInt8]) { state.withLock { $0.payments[id] = json } }

    /// Seeds (or replaces) the payment served at `GET /v1/payments/{id}`.
    public func putPayment(id: String, json: String) { putPayment(id: id, json: Array(json.utf8)) }

    /// Seeds (or replaces) the saved card served at `GET /v1/customers/{customerID}/cards/{cardID}`.
    public func putCustomerCard(customerID: String, cardID: String, json: String) {
        state.withLock { $0.customerCards[customerID + "/" + cardID] = Array(json.utf8) }
    }

    /// Seeds (or replaces) the payment profile served at
    /// `GET /v1/customers/{customerID}/payment-profiles/{profileID}`.
    public func putPaymentProfile(customerID: String, profileID: String, json: String) {
        state.withLock { $0.paymentProfiles[profileID] = (customerID, Array(json.utf8)) }
    }

    /// The order body currently served for `id` (seeded or created by a charge).
    public func order(id: String) -> [UInt8]? { state.withLock { $0.orders[id] } }

    /// Arms a fault for the next `count` authenticated requests to `endpoint`, for resource
    /// `id` only or, with `id` nil, for any resource. See ``EmulatorFault``.
    public func fail(next count: Int = 1, with fault: EmulatorFault, on endpoint: Endpoint, id: String? = nil) {
        state.withLock { $0.faults.arm(fault, count: count, endpoint: endpoint.rawValue, id: id) }
    }

    public func withChargeBook<R: Sendable>(_ body: (inout ChargeBook) -> R) -> R {
        state.withLock { body(&$0.book) }
    }

    /// Requests routed to `endpoint` (for resource `id`, or any), authenticated or not.
    public func callCount(_ endpoint: Endpoint, id: String? = nil) -> Int {
        log.count(provider: .mercadopago, endpoint: endpoint.rawValue, id: id)
    }

    func handle(_ request: HTTPRequest, subpath: String) -> EmulatorReply {
        let endpoint: Endpoint
        let id: String?
        switch (request.method, subpath) {
        case ("GET", let path) where path.hasPrefix("/v1/orders/") && path.count > "/v1/orders/".count:
            endpoint = .order
            id = String(path.dropFirst("/v1/orders/".count))
        case ("GET", let path) where path.hasPrefix("/v1/payments/") && path.count > "/v1/payments/".count:
            endpoint = .payment
            id = String(path.dropFirst("/v1/payments/".count))
        case ("POST", "/v1/orders"), ("POST", "/v1/orders/"):
            endpoint = .createOrder
            id = request.header("x-idempotency-key")
        case ("GET", let path) where path.hasPrefix("/v1/customers/") && path.split(separator: "/").count == 5
                && path.split(separator: "/")[3] == "cards":
            endpoint = .customerCard
            let parts = path.split(separator: "/")
            id = parts[2] + "/" + parts[4]
        case ("GET", let path) where path.hasPrefix("/v1/customers/") && path.split(separator: "/").count == 5
                && path.split(separator: "/")[3] == "payment-profiles":
            endpoint = .paymentProfile
            let parts = path.split(separator: "/")
            id = parts[2] + "/" + parts[4]
        case ("GET", "/v1/orders"), ("GET", "/v1/orders/"):
            endpoint = .searchOrders
            id = PXPEmulator.queryValue("external_reference", in: request.rawQuery)
        default:
            return .json(404, Self.error(404))
        }
        let reply = route(request, endpoint: endpoint, id: id)
        return reply.tagged(endpoint.rawValue, id)
    }

    private func route(_ request: HTTPRequest, endpoint: Endpoint, id: String?) -> EmulatorReply {
        guard request.header("authorization") == "Bearer \(accessToken)" else {
            return .json(401, Self.error(401))
        }
        return state.withLock { state in
            let fault = state.faults.consume(endpoint: endpoint.rawValue, id: id)
            return answer(fault: fault, errorBody: Self.error) {
                switch endpoint {
                case .order:
                    guard let id, let body = state.orders[id] else { return .json(404, Self.error(404)) }
                    return EmulatorReply(status: 200, body: body)
                case .payment:
                    guard let id, let body = state.payments[id] else { return .json(404, Self.error(404)) }
                    return EmulatorReply(status: 200, body: body)
                case .createOrder:
                    return createOrder(request, key: id, state: &state)
                case .searchOrders:
                    return Self.searchOrders(request, orders: state.orders)
                case .customerCard:
                    guard let id, let body = state.customerCards[id] else { return .json(404, Self.error(404)) }
                    return EmulatorReply(status: 200, body: body)
                case .paymentProfile:
                    let parts = (id ?? "").split(separator: "/", maxSplits: 1).map(String.init)
                    guard parts.count == 2, let profile = state.paymentProfiles[parts[1]] else { return .json(404, Self.error(404)) }
                    guard profile.customerID == parts[0] else {
                        return .json(400, Self.error(400, message: "customer_id does not match the payment profile",
                                                     cause: (code: "customer_id_mismatch", description: "customer_id mismatch")))
                    }
                    return EmulatorReply(status: 200, body: profile.body)
                }
            }
        }
    }

    private func createOrder(_ request: HTTPRequest, key: String?, state: inout State) -> EmulatorReply {
        guard let key, !key.isEmpty, key.count <= 64 else {
            return .json(400, Self.error(400, message: "X-Idempotency-Key is required and at most 64 characters"))
        }
        guard let body = JSONRequestBody(request.body),
              let total = body.string("total_amount"),
              let payments = body.array("transactions", "payments"), !payments.isEmpty
        else {
            return .json(400, Self.error(400, message: "total_amount and transactions.payments are required"))
        }
        let orders = state.orders
        if let problem = orderRequestProblem(body, knownOrder: { orders[$0] != nil }) {
            return .json(400, Self.error(400, message: problem.description, cause: problem))
        }
        let fingerprint = body.fingerprint
        switch state.book.charges.lookup(key, fingerprint: fingerprint) {
        case .replay(let status, let stored): return EmulatorReply(status: status, body: stored)
        case .conflict:
            return .json(409, Self.error(409, message: "idempotency key already used with a different request",
                                         cause: (code: "idempotency_key_already_used", description: "idempotency key already used")))
        case .absent: break
        }

        let result = state.book.script.next()
        let (status, detail): (String, String) = switch result {
        case .approved: ("processed", "accredited")
        case .pending: ("processing", "in_process")
        case .declined(let code): ("failed", code)
        case .error: ("failed", "processing_error")
        }
        let orderID = "ORD" + EmulatorIDs.base32(26)
        let now = EmulatorIDs.timestamp()
        // The request's currency (Node SDK CreateOrderRequest.currency), else the account's.
        let currency = body.string("currency") ?? self.currency
        var paymentDocuments: [JSONOutput] = []
        for payment in payments {
            let fields: JSONRequestBody? = if case .object(let object) = payment { JSONRequestBody(root: object) } else { nil }
            var methodMembers: [JSONOutput.Member] = []
            for field in ["id", "type", "card_id"] {
                if let value = fields?.string("payment_method", field) { methodMembers.append(.init(field, .string(value))) }
            }
            let amount = fields?.string("amount") ?? total
            paymentDocuments.append(.object([
                .init("id", .string("PAY" + EmulatorIDs.base32(26))),
                .init("amount", .string(amount)),
                .init("paid_amount", .string(result == .approved ? amount : "0.00")),
                .init("status", .string(status)),
                .init("status_detail", .string(detail)),
                .init("payment_method", .object(methodMembers)),
            ]))
        }
        var members: [JSONOutput.Member] = [
            .init("id", .string(orderID)),
            .init("type", .string(body.string("type") ?? "online")),
            .init("processing_mode", .string(body.string("processing_mode") ?? "automatic")),
            .init("total_amount", .string(total)),
            .init("total_paid_amount", .string(result == .approved ? total : "0.00")),
            .init("country_code", .string(countryCode)),
            .init("user_id", .string(userID)),
            .init("status", .string(status)),
            .init("status_detail", .string(detail)),
            .init("created_date", .string(now)),
            .init("last_updated_date", .string(now)),
        ]
        if answersWithCurrency {
            members.insert(.init("currency", .string(currency)), at: 5)
        }
        if let reference = body.string("external_reference") {
            members.insert(.init("external_reference", .string(reference)), at: 3)
        }
        if let customer = body.string("payer", "customer_id") {
            members.append(.init("payer", .object([.init("customer_id", .string(customer))])))
        }
        members.append(.init("transactions", .object([.init("payments", .array(paymentDocuments))])))
        let document = JSONOutput.object(members).bytes
        state.orders[orderID] = document
        var fields = body.fields(["processing_mode"])
        if case .object(let first)? = payments.first {
            fields.merge(JSONRequestBody(root: first).fields(Self.recordedFields.filter { $0 != "processing_mode" })) { old, _ in old }
        }
        state.book.ledger.record(ExecutedCharge(
            idempotencyKey: key, reference: body.string("external_reference"), providerPaymentID: orderID,
            amount: total, currency: currency.uppercased(), result: result, requestFields: fields))
        // Mercado Pago documents 402 for "order created but a transaction failed", with the
        // order as the body; a created order that did not fail is 201.
        let answerStatus = status == "failed" ? 402 : 201
        state.book.charges.store(key, fingerprint: fingerprint, status: answerStatus, body: document)
        return EmulatorReply(status: answerStatus, body: document)
    }

    /// The order search (Node SDK `order.search`, `src/clients/order/search`): orders whose
    /// `external_reference` equals the query's and whose `created_date` lies between
    /// `begin_date` and `end_date` (each filter applied when given), answered as
    /// `{"data":[order, …],"paging":{"total","total_pages","offset","limit"}}`, the paging values
    /// as strings as in the SDK's test mock. Orders are the stored documents, byte for byte.
    static func searchOrders(_ request: HTTPRequest, orders: [String: [UInt8]]) -> EmulatorReply {
        let reference = PXPEmulator.queryValue("external_reference", in: request.rawQuery)
        let begin = PXPEmulator.queryValue("begin_date", in: request.rawQuery).flatMap(date)
        let end = PXPEmulator.queryValue("end_date", in: request.rawQuery).flatMap(date)
        var matches: [(created: Date, body: [UInt8])] = []
        for body in orders.values {
            guard let fields = JSONRequestBody(body) else { continue }
            if let reference, fields.string("external_reference") != reference { continue }
            let created = fields.string("created_date").flatMap(date) ?? .distantPast
            if let begin, created < begin { continue }
            if let end, created > end { continue }
            matches.append((created, body))
        }
        matches.sort { $0.created < $1.created }
        // The stored documents parsed as JSON above, so they are UTF-8 and embed unchanged.
        let answer: JSONOutput = .object([
            .init("data", .array(matches.map { .raw(String(decoding: $0.body, as: UTF8.self)) })),
            .init("paging", .object([
                .init("total", .string(String(matches.count))), .init("total_pages", .string("1")),
                .init("offset", .string("0")), .init("limit", .string(String(max(matches.count, 10)))),
            ])),
        ])
        return EmulatorReply(status: 200, body: answer.bytes)
    }

    /// An ISO 8601 time with or without fractional seconds.
    static func date(_ text: String) -> Date? {
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
    }

    static func error(_ status: Int) -> JSONOutput { error(status, message: nil) }

    /// Mercado Pago's error body: `{"message","error","status","cause":[{"code","description"}]}`.
    static func error(_ status: Int, message: String?, cause: (code: String, description: String)? = nil) -> JSONOutput {
        let (code, text): (String, String) = switch status {
        case 400: ("bad_request", "invalid request")
        case 401: ("unauthorized", "invalid access token")
        case 403: ("forbidden", "forbidden")
        case 404: ("not_found", "resource not found")
        case 409: ("conflict", "conflict")
        case 429: ("too_many_requests", "too many requests")
        default: ("internal_error", "internal error")
        }
        return .object([.init("message", .string(message ?? text)), .init("error", .string(code)),
                        .init("status", .number(String(status))),
                        .init("cause", .array(cause.map { [.object([.init("code", .string($0.code)), .init("description", .string($0.description))])] } ?? []))])
    }
}
