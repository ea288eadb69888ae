import Foundation
import PayhookCore
import PayhookHTTP
import Synchronization

/// Adyen's Checkout API as the emulator serves it under `/adyen`: `POST /v{N}/payments`
/// (payhook uses `/v72/payments`).
///
/// A request Adyen would refuse is answered 422 with Adyen's error body before anything
/// executes (``paymentProblem(_:)``). Every request needs `X-API-Key` equal to the configured
/// key, else 401; a `merchantAccount`
/// other than the configured one answers 403 (Adyen's "Invalid Merchant Account"). A valid
/// request is a charge whose `resultCode` follows the scripted ``EmulatedChargeResult``
/// (approved → `Authorised`, pending → `Received`, declined → `Refused` with
/// `refusalReasonCode`, error → `Error` without a code), answered 200 as Adyen does for
/// refusals too. With an `Idempotency-Key` (at most 64 characters) the first request executes
/// and later ones with the same key and body replay its answer; a different body with the same
/// key answers 422. Without the header every request executes, as in Adyen.
///
/// Safe to use from any thread.
public final class AdyenEmulator: ChargeControls {
    /// The endpoints faults and counters refer to.
    public enum Endpoint: String, Sendable, CaseIterable {
        /// `POST /v{N}/payments`; resource id = the `Idempotency-Key` (nil without one).
        case payments
        /// `GET /v{N}/storedPaymentMethods?shopperReference=…&merchantAccount=…`; resource id =
        /// the shopper reference.
        case storedPaymentMethods
    }

    private struct State {
        var payments: [String: [UInt8]] = [:]
        /// `StoredPaymentMethodResource` JSON objects by shopper reference.
        var storedMethods: [String: [String]] = [:]
        var faults = FaultPlan()
        var book = ChargeBook()
    }

    /// The API key requests must present as `X-API-Key`.
    public let apiKey: String
    /// The merchant account charges must name.
    public let merchantAccount: String
    private let state = Mutex(State())
    private let log: RequestLog

    init(apiKey: String, merchantAccount: String, log: RequestLog) {
        self.apiKey = apiKey
        self.merchantAccount = merchantAccount
        self.log = log
    }

    /// Adds a token (one `StoredPaymentMethodResource` JSON object) to those
    /// `GET /storedPaymentMethods` lists for `shopperReference`.
    public func putStoredPaymentMethod(shopperReference: String, json: String) {
        state.withLock { $0.storedMethods[shopperReference, default: []].append(json) }
    }

    /// The answer stored for a charge, by the `pspReference` it returned.
    public func payment(pspReference: String) -> [UInt8]? { state.withLock { $0.payments[pspReference] } }

    /// Arms a fault for the next `count` authenticated requests to `endpoint`, for the given
    /// idempotency key only or, with `id` nil, for any. See ``EmulatorFault``.
    public func fail(next count: Int = 1, with fault: EmulatorFault, on endpoint: Endpoint = .payments, id: String? = nil) {
        state.withLock { $0.faults.arm(fault, count: count, endpoint: endpoint.rawValue, id: id) }
    }

    public func withChargeBook<R: Sendable>(_ body: (inout ChargeBook) -> R) -> R {
        state.withLock { body(&$0.book) }
    }

    /// Requests routed to `endpoint` (with idempotency key `id`, or any), authenticated or not.
    public func callCount(_ endpoint: Endpoint = .payments, id: String? = nil) -> Int {
        log.count(provider: .adyen, endpoint: endpoint.rawValue, id: id)
    }

    func handle(_ request: HTTPRequest, subpath: String) -> EmulatorReply {
        let segments = subpath.split(separator: "/", omittingEmptySubsequences: true)
        guard segments.count == 2, segments[0].hasPrefix("v"), Int(segments[0].dropFirst()) != nil,
              segments[1] == "payments" || segments[1] == "storedPaymentMethods"
        else {
            return .json(404, Self.error(404))
        }
        if segments[1] == "storedPaymentMethods" {
            guard request.method == "GET" else { return .json(405, Self.error(405)) }
            let shopper = PXPEmulator.queryValue("shopperReference", in: request.rawQuery)
            return storedPaymentMethods(request, shopper: shopper).tagged(Endpoint.storedPaymentMethods.rawValue, shopper)
        }
        guard request.method == "POST" else { return .json(405, Self.error(405)) }
        let key = request.header("idempotency-key")
        return route(request, key: key).tagged(Endpoint.payments.rawValue, key)
    }

    private func route(_ request: HTTPRequest, key: String?) -> EmulatorReply {
        guard request.header("x-api-key") == apiKey else { return .json(401, Self.error(401)) }
        return state.withLock { state in
            let fault = state.faults.consume(endpoint: Endpoint.payments.rawValue, id: key)
            return answer(fault: fault, errorBody: Self.error) { charge(request, key: key, state: &state) }
        }
    }

    /// The Checkout answer `{"merchantAccount", "shopperReference", "storedPaymentMethods": [...]}`.
    /// Both query parameters are required; another merchant account is refused like a charge's.
    /// A shopper with no tokens gets an empty list (what Adyen answers then: UNCONFIRMED).
    private func storedPaymentMethods(_ request: HTTPRequest, shopper: String?) -> EmulatorReply {
        guard request.header("x-api-key") == apiKey else { return .json(401, Self.error(401)) }
        return state.withLock { state in
            let fault = state.faults.consume(endpoint: Endpoint.storedPaymentMethods.rawValue, id: shopper)
            return answer(fault: fault, errorBody: Self.error) {
                guard let shopper, !shopper.isEmpty,
                      let account = PXPEmulator.queryValue("merchantAccount", in: request.rawQuery), !account.isEmpty else {
                    return .json(422, Self.error(422, message: "shopperReference and merchantAccount are required"))
                }
                guard account == merchantAccount else { return .json(403, Self.error(403)) }
                let methods = (state.storedMethods[shopper] ?? []).map { JSONOutput.raw($0) }
                return .json(200, .object([
                    .init("merchantAccount", .string(account)), .init("shopperReference", .string(shopper)),
                    .init("storedPaymentMethods", .array(methods)),
                ]))
            }
        }
    }

    private func charge(_ request: HTTPRequest, key: String?, state: inout State) -> EmulatorReply {
        if let key, key.isEmpty || key.count > 64 {
            return .json(422, Self.error(422, message: "Idempotency-Key must be 1 to 64 characters"))
        }
        guard let body = JSONRequestBody(request.body) else {
            return .json(400, Self.error(400, message: "Structure of the request is invalid"))
        }
        guard body.string("merchantAccount") == merchantAccount else {
            return .json(403, Self.error(403))
        }
        guard let currency = body.string("amount", "currency"), let value = body.numberText("amount", "value"),
              Int64(value) != nil, let reference = body.string("reference"),
              body.isObject(["paymentMethod"])
        else {
            return .json(422, Self.error(422, message: "amount, reference and paymentMethod are required"))
        }
        if let problem = Self.paymentProblem(body) {
            return .json(422, Self.error(422, message: problem))
        }
        let fingerprint = body.fingerprint
        if let key {
            switch state.book.charges.lookup(key, fingerprint: fingerprint) {
            case .replay(let status, let stored): return EmulatorReply(status: status, body: stored)
            case .conflict:
                return .json(422, Self.error(422, message: "Idempotency key already used with a different request"))
            case .absent: break
            }
        }

        let pspReference = EmulatorIDs.base32(16)
        var members: [JSONOutput.Member] = [.init("pspReference", .string(pspReference))]
        let result = state.book.script.next()
        switch result {
        case .approved:
            members.append(.init("resultCode", .string("Authorised")))
        case .pending:
            members.append(.init("resultCode", .string("Received")))
        case .declined(let code):
            members.append(.init("resultCode", .string("Refused")))
            members.append(.init("refusalReason", .string(Self.refusalReason(code))))
            members.append(.init("refusalReasonCode", .string(code)))
        case .error:
            members.append(.init("resultCode", .string("Error")))
            members.append(.init("refusalReason", .string("Acquirer Error")))
        }
        members.append(.init("amount", .object([.init("currency", .string(currency)), .init("value", .number(value))])))
        members.append(.init("merchantReference", .string(reference)))
        if let model = body.string("recurringProcessingModel") {
            members.append(.init("additionalData", .object([.init("recurringProcessingModel", .string(model))])))
        }
        let document = JSONOutput.object(members).bytes
        state.payments[pspReference] = document
        state.book.ledger.record(ExecutedCharge(
            idempotencyKey: key, reference: reference, providerPaymentID: pspReference, amount: value,
            currency: currency.uppercased(), result: result,
            requestFields: body.fields(["recurringProcessingModel", "shopperReference", "paymentMethod.storedPaymentMethodId"])))
        if let key { state.book.charges.store(key, fingerprint: fingerprint, status: 200, body: document) }
        return EmulatorReply(status: 200, body: document)
    }

    static let shopperInteractions: Set<String> = ["Ecommerce", "ContAuth", "Moto", "POS"]
    static let recurringProcessingModels: Set<String> = ["CardOnFile", "Subscription", "UnscheduledCardOnFile"]

    /// Why Adyen would refuse this `/payments` request (422, `validation`), or nil: a currency
    /// of three upper-case letters, a reference of at most 80 characters, `paymentMethod.type`,
    /// `shopperInteraction` and `recurringProcessingModel` from Adyen's enumerations, and for a
    /// stored payment method (`storedPaymentMethodId`) a `shopperReference`, `ContAuth` and a
    /// processing model.
    static func paymentProblem(_ body: JSONRequestBody) -> String? {
        guard let currency = body.string("amount", "currency"), currency.count == 3,
              currency.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else { return "amount.currency must be an ISO 4217 code" }
        guard body.isInteger(["amount", "value"]) else { return "amount.value must be an integer in minor units" }
        guard let reference = body.string("reference"), !reference.isEmpty, reference.count <= 80 else {
            return "reference is required, at most 80 characters"
        }
        guard let type = body.string("paymentMethod", "type"), !type.isEmpty else { return "paymentMethod.type is required" }
        // Checkout's PaymentRequest lists returnUrl among its required fields, at most 1024
        // characters (Adyen/adyen-openapi json/CheckoutService-v72.json, PaymentRequest).
        guard let returnURL = body.string("returnUrl"), !returnURL.isEmpty, returnURL.utf8.count <= 1024 else {
            return "returnUrl is required, at most 1024 characters"
        }
        if let interaction = body.value(["shopperInteraction"]) {
            guard case .string(let text) = interaction, shopperInteractions.contains(text) else {
                return "shopperInteraction must be Ecommerce, ContAuth, Moto or POS"
            }
        }
        if let model = body.value(["recurringProcessingModel"]) {
            guard case .string(let text) = model, recurringProcessingModels.contains(text) else {
                return "recurringProcessingModel must be CardOnFile, Subscription or UnscheduledCardOnFile"
            }
        }
        if body.value(["paymentMethod", "storedPaymentMethodId"]) != nil {
            guard let shopper = body.string("shopperReference"), !shopper.isEmpty else {
                return "shopperReference is required with a storedPaymentMethodId"
            }
            guard body.string("shopperInteraction") == "ContAuth", body.string("recurringProcessingModel") != nil else {
                return "a stored payment method charged by the merchant needs shopperInteraction ContAuth and a recurringProcessingModel"
            }
        }
        return nil
    }

    /// Adyen's refusal reason texts for the codes PROVIDERS.md classifies.
    static func refusalReason(_ code: String) -> String {
        switch code {
        case "2": "Refused"
        case "4": "Acquirer Error"
        case "5": "Blocked Card"
        case "6": "Expired Card"
        case "8": "Invalid Card Number"
        case "9": "Issuer Unavailable"
        case "11": "3D Not Authenticated"
        case "12": "Not enough balance"
        case "14", "20": "FRAUD"
        case "22": "FRAUD-CANCELLED"
        case "24": "CVC Declined"
        case "25": "Restricted Card"
        case "26": "Revocation Of Auth"
        case "28": "Withdrawal amount exceeded"
        case "29": "Withdrawal count exceeded"
        case "31": "Issuer Suspected Fraud"
        case "38": "Authentication required"
        case "42": "Declined Non Generic"
        default: "Refused"
        }
    }

    static func error(_ status: Int) -> JSONOutput { error(status, message: nil) }

    /// Adyen's service error shape: `{"status","errorCode","message","errorType"}`. The error
    /// codes are illustrative except 000 (unauthorized) and 901 (invalid merchant account).
    static func error(_ status: Int, message: String?) -> JSONOutput {
        let (code, text, type): (String, String, String) = switch status {
        case 401: ("000", "HTTP Status Response - Unauthorized", "security")
        case 403: ("901", "Invalid Merchant Account", "security")
        case 404: ("000", "HTTP Status Response - Not Found", "validation")
        case 405: ("000", "HTTP Status Response - Method Not Allowed", "validation")
        case 400, 422: ("702", "Structure of the request is invalid", "validation")
        case 429: ("000", "Too Many Requests", "security")
        default: ("905", "Internal error", "internal")
        }
        return .object([.init("status", .number(String(status))), .init("errorCode", .string(code)),
                        .init("message", .string(message ?? text)), .init("errorType", .string(type))])
    }
}
