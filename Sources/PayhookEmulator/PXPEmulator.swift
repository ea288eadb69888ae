import Foundation
import PayhookCore
import PayhookCrypto
import PayhookHTTP
import Synchronization

/// PXP Unity's transactions API as the emulator serves it under `/pxp/api/v1`.
///
/// - `GET /transactions/{merchant}/{site}?systemTransactionId={id}` and
///   `…?merchantTransactionId={id}`: PXP's documented lookup
///   (https://developer.pxp.io/guides/transactions/get-transaction-details). Exactly one of the
///   two query parameters; the merchant and site of the path must be the configured ones (else
///   403). The answer is the one transaction object the reference shows (seeded with
///   ``putTransaction(id:json:)`` or created by a charge, byte for byte; for a
///   `merchantTransactionId` used twice, the latest).
/// - `GET /transactions/{systemTransactionId}`: the same transaction, as seed 003's backend code
///   reads it (not in PXP's reference; UNCONFIRMED, accepted because a real integration uses it).
/// - No match: PXP documents no answer (UNCONFIRMED); the emulator answers a single-resource
///   GET's usual 404 with its error body. `GET /transactions?…` does not exist: 404.
/// - `POST /transactions`: a charge, idempotent by `merchantTransactionId` (required), checked
///   first as PXP would (``chargeProblem(_:merchantTransactionID:)``: a 400 executes nothing). The
///   first request with an id executes: a transaction whose state follows the scripted
///   ``EmulatedChargeResult`` (approved → `Captured` for intent `Purchase`, else `Authorised`;
///   pending → `Pending`; declined → `Refused` with `stateData.code`; error → `Error`), stored
///   for `GET` and answered 200. The same id again replays it (UNCONFIRMED: the real API may
///   reject a duplicate `merchantTransactionId` instead; payhook looks the transaction up
///   before retrying either way). The replay check ignores `merchantTransactionDate`, which
///   a client stamps anew on each attempt; any other difference is a 409.
///
/// Every request must carry `X-Client-Id` equal to the configured client id, an
/// `X-Request-Id`, and `Authorization: PXP-UST1 {tokenId}:{timestamp}:{hmac}` with the
/// configured token id, a Unix timestamp in seconds or milliseconds and a base64 SHA-256 HMAC;
/// else 401. When `verifiesSignatures` is on, the HMAC is recomputed here, independently of
/// payhook's `PXPRequestSigner`, over `timestamp + requestId + method + path + body` with the
/// token value's UTF-8 bytes as key (the same UNCONFIRMED assumption). The path is rebuilt by
/// re-escaping the decoded path the server sees, so ids containing `/` cannot be verified.
///
/// Safe to use from any thread.
public final class PXPEmulator: ChargeControls {
    /// The endpoints faults and counters refer to.
    public enum Endpoint: String, Sendable, CaseIterable {
        /// `GET /transactions/{merchant}/{site}?systemTransactionId=…`; resource id = that
        /// `systemTransactionId`.
        case transaction
        /// `POST /transactions`; resource id = `merchantTransactionId`.
        case createTransaction
        /// `GET /transactions/{merchant}/{site}?merchantTransactionId=…`; resource id = that
        /// `merchantTransactionId`.
        case findTransactions
    }

    private struct State {
        var transactions: [String: [UInt8]] = [:]
        var faults = FaultPlan()
        var book = ChargeBook()
        /// `systemTransactionId`s by `merchantTransactionId`, in creation order.
        var byMerchantTransactionID: [String: [String]] = [:]

        /// Stores a transaction and indexes it by `merchantTransactionId` (read from `json`
        /// unless given), replacing an earlier version and its index entry.
        mutating func put(_ systemTransactionID: String, json: [UInt8], merchantTransactionID: String? = nil) {
            if let previous = transactions[systemTransactionID],
               let oldID = JSONRequestBody(previous)?.string("merchantTransactionId") {
                byMerchantTransactionID[oldID]?.removeAll { $0 == systemTransactionID }
            }
            transactions[systemTransactionID] = json
            if let merchantTransactionID = merchantTransactionID ?? JSONRequestBody(json)?.string("merchantTransactionId") {
                byMerchantTransactionID[merchantTransactionID, default: []].append(systemTransactionID)
            }
        }
    }

    /// Expected in `X-Client-Id`.
    public let clientID: String
    /// Expected as the first part of the `PXP-UST1` credential.
    public let tokenID: String
    /// The HMAC key; not public, so a test cannot print it by accident.
    let tokenValue: String
    /// The only `merchant` charges may name.
    public let merchant: String
    /// The only `site` charges may name.
    public let site: String
    /// Whether the HMAC in `Authorization` is recomputed and compared, or only its form checked.
    public let verifiesSignatures: Bool
    private let state = Mutex(State())
    private let log: RequestLog

    init(clientID: String, tokenID: String, tokenValue: String, merchant: String, site: String,
         verifiesSignatures: Bool, log: RequestLog) {
        self.clientID = clientID
        self.tokenID = tokenID
        self.tokenValue = tokenValue
        self.merchant = merchant
        self.site = site
        self.verifiesSignatures = verifiesSignatures
        self.log = log
    }

    /// Seeds (or replaces) the transaction with this `systemTransactionId`, served by the lookups.
    public func putTransaction(id: String, json: [UInt8]) { state.withLock { $0.put(id, json: json) } }

    /// Seeds (or replaces) the transaction with this `systemTransactionId`, served by the lookups.
    public func putTransaction(id: String, json: String) { putTransaction(id: id, json: Array(json.utf8)) }

    /// The transaction body currently served for `id` (seeded or created by a charge).
    public func transaction(id: String) -> [UInt8]? { state.withLock { $0.transactions[id] } }

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
        log.count(provider: .pxp, endpoint: endpoint.rawValue, id: id)
    }

    func handle(_ request: HTTPRequest, subpath: String, fullPath: String) -> EmulatorReply {
        let collection = "/api/v1/transactions"
        let endpoint: Endpoint
        let id: String?
        var pathForm = false
        let lookupSegments = subpath.hasPrefix(collection + "/")
            ? subpath.dropFirst(collection.count + 1).split(separator: "/", omittingEmptySubsequences: false) : []
        switch (request.method, subpath) {
        case ("GET", _) where lookupSegments.count == 2 && !lookupSegments.contains(where: \.isEmpty):
            let system = Self.queryValue("systemTransactionId", in: request.rawQuery)
            let merchantID = Self.queryValue("merchantTransactionId", in: request.rawQuery)
            endpoint = system != nil && merchantID == nil ? .transaction : .findTransactions
            id = system ?? merchantID
        case ("GET", _) where lookupSegments.count == 1 && !lookupSegments[0].isEmpty:
            endpoint = .transaction
            id = String(lookupSegments[0])
            pathForm = true
        case ("POST", collection), ("POST", collection + "/"):
            endpoint = .createTransaction
            id = JSONRequestBody(request.body)?.string("merchantTransactionId")
        default:
            return .json(404, Self.error(404))
        }
        return route(request, endpoint: endpoint, id: id, pathForm: pathForm, fullPath: fullPath).tagged(endpoint.rawValue, id)
    }

    /// - Parameter pathForm: `GET /transactions/{systemTransactionId}` rather than the
    ///   documented lookup with merchant, site and query.
    private func route(_ request: HTTPRequest, endpoint: Endpoint, id: String?, pathForm: Bool, fullPath: String) -> EmulatorReply {
        if let problem = authenticationProblem(request, fullPath: fullPath) {
            return .json(401, Self.error(401, message: problem))
        }
        return state.withLock { state in
            let fault = state.faults.consume(endpoint: endpoint.rawValue, id: id)
            return answer(fault: fault, errorBody: Self.error) {
                switch endpoint {
                case .transaction where pathForm:
                    return transaction(systemTransactionID: id, state: state)
                case .transaction, .findTransactions:
                    return lookUp(request, fullPath: fullPath, state: state)
                case .createTransaction:
                    return createTransaction(request, merchantTransactionID: id, state: &state)
                }
            }
        }
    }

    /// The lookup: the path's merchant and site must be this client's, and exactly one of
    /// `systemTransactionId` and `merchantTransactionId` names what to find.
    private func lookUp(_ request: HTTPRequest, fullPath: String, state: State) -> EmulatorReply {
        let segments = fullPath.split(separator: "/").suffix(2).map(String.init)
        guard segments == [merchant, site] else {
            return .json(403, Self.error(403, message: "merchant or site not allowed for this client"))
        }
        let system = Self.queryValue("systemTransactionId", in: request.rawQuery)
        let merchantID = Self.queryValue("merchantTransactionId", in: request.rawQuery)
        switch (system, merchantID) {
        case (let system?, nil) where !system.isEmpty:
            return transaction(systemTransactionID: system, state: state)
        case (nil, let merchantID?) where !merchantID.isEmpty:
            return transaction(systemTransactionID: state.byMerchantTransactionID[merchantID]?.last, state: state)
        default:
            return .json(400, Self.error(400, message: "exactly one of systemTransactionId and merchantTransactionId is required"))
        }
    }

    /// One transaction object, or 404 when there is none.
    private func transaction(systemTransactionID: String?, state: State) -> EmulatorReply {
        guard let systemTransactionID, let document = state.transactions[systemTransactionID] else {
            return .json(404, Self.error(404, message: "no such transaction"))
        }
        return EmulatorReply(status: 200, body: document)
    }

    /// Why the request's credentials are refused, or `nil`. The reasons name the failing part,
    /// never a credential value.
    func authenticationProblem(_ request: HTTPRequest, fullPath: String) -> String? {
        guard request.header("x-client-id") == clientID else { return "X-Client-Id missing or unknown" }
        guard let requestID = request.header("x-request-id"), !requestID.isEmpty else { return "X-Request-Id missing" }
        guard let authorization = request.header("authorization"), authorization.hasPrefix("PXP-UST1 ") else {
            return "Authorization is not PXP-UST1"
        }
        let parts = authorization.dropFirst("PXP-UST1 ".count).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return "Authorization is not tokenId:timestamp:hmac" }
        let (token, timestamp, signature) = (String(parts[0]), String(parts[1]), String(parts[2]))
        guard token == tokenID else { return "unknown token id" }
        guard [10, 13].contains(timestamp.count), timestamp.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return "timestamp is not Unix seconds or milliseconds"
        }
        guard let received = try? Base64.decode(signature), received.count == 32 else {
            return "hmac is not base64 SHA-256"
        }
        guard verifiesSignatures else { return nil }
        var message = Array(timestamp.utf8) + Array(requestID.utf8) + Array(request.method.utf8)
        message += Self.wirePath(fullPath).utf8
        message += request.body
        let expected = HMAC.authenticationCode(.sha256, key: Array(tokenValue.utf8), message: message)
        return ConstantTime.equals(expected, received) ? nil : "hmac does not match"
    }

    /// The decoded path escaped again segment by segment (RFC 3986 unreserved bytes kept), as
    /// a client that escapes ids that way put it on the wire.
    static func wirePath(_ decoded: String) -> String {
        var out = ""
        for byte in decoded.utf8 {
            let keep = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "/")
            if keep {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    private func createTransaction(_ request: HTTPRequest, merchantTransactionID: String?, state: inout State) -> EmulatorReply {
        guard let body = JSONRequestBody(request.body) else { return .json(400, Self.error(400, message: "body is not a JSON object")) }
        guard let merchantTransactionID, !merchantTransactionID.isEmpty else {
            return .json(400, Self.error(400, message: "merchantTransactionId is required"))
        }
        guard body.string("merchant") == merchant, body.string("site") == site else {
            return .json(403, Self.error(403, message: "merchant or site not allowed for this client"))
        }
        if let problem = Self.chargeProblem(body, merchantTransactionID: merchantTransactionID) {
            return .json(400, Self.error(400, message: problem))
        }
        guard let amount = body.numberText("amounts", "transaction"), let currency = body.string("amounts", "currencyCode") else {
            return .json(400, Self.error(400, message: "amounts.transaction and amounts.currencyCode are required"))
        }
        let fingerprint = body.fingerprint(excluding: ["merchantTransactionDate"])
        switch state.book.charges.lookup(merchantTransactionID, fingerprint: fingerprint) {
        case .replay(let status, let stored): return EmulatorReply(status: status, body: stored)
        case .conflict: return .json(409, Self.error(409, message: "merchantTransactionId already used"))
        case .absent: break
        }

        let intent = body.string("transactionMethod", "intent") ?? "Authorisation"
        var stateMembers: [JSONOutput.Member] = []
        let result = state.book.script.next()
        switch result {
        case .approved:
            let approved = intent == "Purchase" ? "Captured" : "Authorised"
            stateMembers = [.init("state", .string(approved)), .init("stateMessage", .string("Transaction \(approved)"))]
        case .pending:
            stateMembers = [.init("state", .string("Pending")), .init("stateMessage", .string("Transaction Pending"))]
        case .declined(let code):
            stateMembers = [.init("state", .string("Refused")), .init("stateMessage", .string("Transaction Refused")),
                            .init("stateData", .object([.init("code", .string(code))]))]
        case .error:
            stateMembers = [.init("state", .string("Error")), .init("stateMessage", .string("Transaction Error"))]
        }
        let systemTransactionID = EmulatorIDs.uuid()
        let document = JSONOutput.object(
            [.init("systemTransactionId", .string(systemTransactionID))] + stateMembers + [
                .init("transactionMethod", .object([
                    .init("intent", .string(intent)),
                    .init("fundingType", .string(body.string("transactionMethod", "fundingType") ?? "Card")),
                    .init("entryType", .string(body.string("transactionMethod", "entryType") ?? "Ecom")),
                ])),
                .init("merchant", .string(merchant)),
                .init("site", .string(site)),
                .init("merchantTransactionId", .string(merchantTransactionID)),
                .init("merchantTransactionDate", .string(body.string("merchantTransactionDate") ?? EmulatorIDs.timestamp())),
                .init("amounts", .object([.init("transactionValue", .number(amount)), .init("currencyCode", .string(currency))])),
            ]).bytes
        state.put(systemTransactionID, json: document, merchantTransactionID: merchantTransactionID)
        state.book.ledger.record(ExecutedCharge(
            idempotencyKey: merchantTransactionID, reference: nil, providerPaymentID: systemTransactionID,
            amount: amount, currency: currency.uppercased(), result: result,
            requestFields: body.fields([Self.processingModelPath, Self.previousTransactionPath].map { $0.joined(separator: ".") })))
        // UNCONFIRMED: 200 for every outcome, the decline being in `state`.
        state.book.charges.store(merchantTransactionID, fingerprint: fingerprint, status: 200, body: document)
        return EmulatorReply(status: 200, body: document)
    }

    /// Where the stored card, the processing model and the earlier transaction are read: the
    /// same UNCONFIRMED paths as payhook's `PXPUnconfirmedFields`, kept apart on purpose so a
    /// change to one that the other does not share fails a test.
    static let gatewayTokenPath = ["fundingData", "card", "gatewayTokenId"]
    static let processingModelPath = ["recurring", "processingModel"]
    static let previousTransactionPath = ["recurring", "previousTransactionReference"]

    /// PXP's processing models for card-on-file and merchant-initiated transactions.
    static let processingModels: Set<String> = [
        "CardOnFileShopperConsent", "CardOnFileShopperInitiated", "MerchantInitiatedInitialRecurring",
        "MerchantInitiatedSubsequentRecurring", "MerchantInitiatedResubmission", "MerchantInitiatedReAuthorisation",
        "MerchantInitiatedDelayedCharge", "MerchantInitiatedNoShow",
    ]

    /// Why PXP would refuse this `POST /transactions`, or nil: `merchantTransactionId` of at
    /// most 50 characters, a `merchantTransactionDate`, `transactionMethod` from PXP's
    /// enumerations (intent `Authorisation` or `Purchase`, entry type `Ecom` or `MOTO`, funding
    /// type `Card`), the amount as `amounts.transaction` (`transactionValue` is the answer's
    /// name and is refused in a request), a stored card, and one of PXP's processing models.
    static func chargeProblem(_ body: JSONRequestBody, merchantTransactionID: String) -> String? {
        guard merchantTransactionID.count <= 50 else { return "merchantTransactionId must be at most 50 characters" }
        guard body.string("merchantTransactionDate") != nil else { return "merchantTransactionDate is required" }
        guard let intent = body.string("transactionMethod", "intent"), ["Authorisation", "Purchase"].contains(intent) else {
            return "transactionMethod.intent must be Authorisation or Purchase"
        }
        guard let entry = body.string("transactionMethod", "entryType"), ["Ecom", "MOTO"].contains(entry) else {
            return "transactionMethod.entryType must be Ecom or MOTO"
        }
        guard body.string("transactionMethod", "fundingType") == "Card" else { return "transactionMethod.fundingType must be Card" }
        guard body.value(["amounts", "transactionValue"]) == nil else {
            return "amounts.transactionValue is not a request field; send amounts.transaction"
        }
        guard body.isNumber(["amounts", "transaction"]) else { return "amounts.transaction must be a number" }
        guard let token = body.string(gatewayTokenPath), !token.isEmpty else {
            return "a stored card (gatewayTokenId) is required"
        }
        guard let model = body.string(processingModelPath), processingModels.contains(model) else {
            return "the processing model must be one of PXP's card-on-file or merchant-initiated models"
        }
        return nil
    }

    /// The first value of `name` in a raw query string, percent-decoded (`+` as a space).
    static func queryValue(_ name: String, in rawQuery: String) -> String? {
        for pair in rawQuery.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == name else { continue }
            let raw = parts.count > 1 ? String(parts[1]) : ""
            return raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    static func error(_ status: Int) -> JSONOutput { error(status, message: nil) }

    /// An approximation of PXP's error shape (UNCONFIRMED field names).
    static func error(_ status: Int, message: String?) -> JSONOutput {
        let text = switch status {
        case 400: "Bad request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not found"
        case 409: "Conflict"
        case 429: "Too many requests"
        default: "Internal server error"
        }
        return .object([.init("status", .number(String(status))), .init("title", .string(text)),
                        .init("detail", .string(message ?? text))])
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
