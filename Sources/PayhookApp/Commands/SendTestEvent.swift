import Foundation
import PayhookCore
import PayhookCrypto
import PayhookProviders

/// What `payhook send-test` builds one event from: the operator's options, the signing key and
/// the names payhook's configuration gives the provider accounts.
struct SendTestInput: Sendable {
    /// Merchant reference (Adyen `merchantReference`, Mercado Pago `external_reference`, PXP
    /// `merchantTransactionId`); the shopper reference of token events.
    var reference: String
    var amount: Money
    /// `--id`: the provider's id of the payment, order, transaction or token the event is
    /// about (an Adyen modification's `originalReference`); a new one when `nil`.
    var id: String?
    /// The current key of the route's ring, already decoded.
    var key: [UInt8]
    var pxpAlgorithm: HashAlgorithm
    var adyenMerchantAccount: String
    var pxpMerchant: String
    var pxpSite: String
    var now: Date
}

/// One delivery ready to post, and what the emulator must serve for it to be processed.
struct SendTestDelivery: Sendable {
    /// Raw query string without `?` ("" for none).
    var query: String = ""
    var headers: [(String, String)]
    var body: [UInt8]
    /// `{provider}/{collection}/{id}` under the emulator's seed path, and the resource's JSON.
    var seed: (path: String, body: [UInt8])?
    /// The ids the event names, for the operator to reuse with `--id` or to look up.
    var ids: [(String, String)]
}

/// An event `payhook send-test` can fire, built as the provider sends it.
///
/// Bodies follow PROVIDERS.md and the shapes the providers document; fields payhook does not
/// read are there too, so the stored delivery looks like a real one. Signing is
/// ``WebhookSigner``'s, the same the tests' deliveries use.
struct SendTestEvent: Sendable {
    let provider: ProviderID
    /// As typed on the command line (matched without regard to case).
    let name: String
    let summary: String
    let build: @Sendable (SendTestInput) -> SendTestDelivery

    static let all: [SendTestEvent] = [
        adyenStandard("AUTHORISATION", "a card payment authorised", modification: false),
        adyenStandard("CAPTURE", "a capture of the payment --id (or a new one)", modification: true),
        adyenStandard("CAPTURE_FAILED", "the scheme refused a capture reported done", modification: true,
                      reason: "Capture failed: insufficient balance at the acquirer"),
        adyenStandard("CANCELLATION", "an authorisation cancelled", modification: true),
        adyenStandard("REFUND", "a refund of the payment", modification: true),
        adyenStandard("CHARGEBACK", "the shopper disputed the payment", modification: true,
                      reason: "Other Fraud-Card Absent Environment",
                      additional: [("chargebackReasonCode", "10.4"), ("chargebackSchemeCode", "visa")]),
        adyenToken("recurring.token.created", "a stored card was tokenized", operation: "created"),
        adyenToken("recurring.token.disabled", "a stored card was disabled", operation: "disabled"),
        mercadoPagoOrder("order.processed", "an order paid (the emulator serves it processed)", status: .processed),
        mercadoPagoOrder("order.refunded", "an order refunded in full", status: .refunded),
        mercadoPagoPayment("payment.updated", "a classic payment approved"),
        pxpTransaction("transaction.authorised", "a card transaction authorised", state: "Authorised"),
        pxpTransaction("transaction.captured", "a card purchase captured", state: "Captured"),
        pxpTransaction("transaction.refused", "a card transaction refused by the issuer", state: "Refused"),
        pxpToken("token.created", "a card stored in PXP's token vault", status: "Active"),
        pxpToken("token.disabled", "a stored card disabled", status: "Disabled"),
    ]

    /// The event of `provider` called `name`, ignoring case.
    static func find(provider: ProviderID, name: String) -> SendTestEvent? {
        all.first { $0.provider == provider && $0.name.lowercased() == name.lowercased() }
    }

    /// The amount an event carries when `--amount` is not given (minor units, currency):
    /// Mercado Pago's accounts bill in their country's currency (the emulator's in BRL).
    static func defaultAmount(_ provider: ProviderID) -> (minorUnits: Int64, currency: String) {
        (1999, provider == .mercadopago ? "BRL" : "EUR")
    }

    // MARK: Adyen

    /// A standard notification with one `NotificationRequestItem` signed in
    /// `additionalData.hmacSignature`. A modification names the payment it modifies in
    /// `originalReference` and has a new `pspReference` of its own.
    private static func adyenStandard(
        _ eventCode: String, _ summary: String, modification: Bool, reason: String? = nil,
        additional: [(String, String)] = []
    ) -> SendTestEvent {
        SendTestEvent(provider: .adyen, name: eventCode, summary: summary) { input in
            let pspReference = modification ? SendTestIDs.adyenReference() : input.id ?? SendTestIDs.adyenReference()
            let originalReference = modification ? input.id ?? SendTestIDs.adyenReference() : nil
            // `--amount` is ISO minor units; Adyen's body carries Adyen's (CLP 12345 is 1234500).
            // The command refused amounts Adyen cannot express before building anything.
            let value: String
            do {
                value = String(try AdyenCurrency.adyenValue(of: input.amount))
            } catch {
                preconditionFailure("send-test checks Adyen amounts before building: \(error)")
            }
            let signing = WebhookSigner.adyenSigningString(
                pspReference: pspReference, originalReference: originalReference,
                merchantAccountCode: input.adyenMerchantAccount, merchantReference: input.reference,
                value: value, currency: input.amount.currency, eventCode: eventCode, success: "true")
            let signature = WebhookSigner.adyenItemSignature(key: input.key, signingString: signing)
            var additionalData: [(String, String)] = [("hmacSignature", signature)]
            if eventCode == "AUTHORISATION" {
                additionalData += [("authCode", "083415"), ("cardSummary", "1111"), ("expiryDate", "03/2030"),
                                   ("fundingSource", "CREDIT"), ("paymentMethodVariant", "visa")]
            }
            additionalData += additional
            var item = "{\"additionalData\":{" + additionalData.map { "\(JSONString.quote($0.0)):\(JSONString.quote($0.1))" }
                .joined(separator: ",") + "},"
            item += "\"amount\":{\"currency\":\(JSONString.quote(input.amount.currency)),\"value\":\(value)},"
            item += "\"eventCode\":\(JSONString.quote(eventCode)),\"eventDate\":\(JSONString.quote(SendTestIDs.timestamp(input.now))),"
            item += "\"merchantAccountCode\":\(JSONString.quote(input.adyenMerchantAccount)),"
            item += "\"merchantReference\":\(JSONString.quote(input.reference)),"
            if let originalReference { item += "\"originalReference\":\(JSONString.quote(originalReference))," }
            if eventCode == "AUTHORISATION" { item += "\"operations\":[\"CANCEL\",\"CAPTURE\",\"REFUND\"]," }
            item += "\"paymentMethod\":\"visa\",\"pspReference\":\(JSONString.quote(pspReference)),"
            item += "\"reason\":\(JSONString.quote(reason ?? (eventCode == "AUTHORISATION" ? "083415:1111:03/2030" : ""))),"
            item += "\"success\":\"true\"}"
            let body = "{\"live\":\"false\",\"notificationItems\":[{\"NotificationRequestItem\":\(item)}]}"
            var ids = [("pspReference", pspReference)]
            if let originalReference { ids.append(("originalReference", originalReference)) }
            ids += [("merchantReference", input.reference), ("amount", input.amount.description)]
            return SendTestDelivery(headers: [("Content-Type", "application/json")], body: Array(body.utf8), seed: nil, ids: ids)
        }
    }

    /// A tokenization webhook, signed over the raw body in the `HmacSignature` header.
    private static func adyenToken(_ type: String, _ summary: String, operation: String) -> SendTestEvent {
        SendTestEvent(provider: .adyen, name: type, summary: summary) { input in
            let token = input.id ?? SendTestIDs.adyenReference()
            let eventID = SendTestIDs.adyenReference()
            let body = Array("""
                {"createdAt":\(JSONString.quote(SendTestIDs.timestamp(input.now))),"data":{"merchantAccount":\
                \(JSONString.quote(input.adyenMerchantAccount)),"operation":\(JSONString.quote(operation)),\
                "shopperReference":\(JSONString.quote(input.reference)),"storedPaymentMethodId":\(JSONString.quote(token)),\
                "type":"visa"},"environment":"test","eventId":\(JSONString.quote(eventID)),"type":\(JSONString.quote(type))}
                """.utf8)
            return SendTestDelivery(
                headers: [("Content-Type", "application/json"),
                          ("HmacSignature", WebhookSigner.adyenHeaderSignature(key: input.key, body: body))],
                body: body, seed: nil,
                ids: [("storedPaymentMethodId", token), ("shopperReference", input.reference), ("eventId", eventID)])
        }
    }

    // MARK: Mercado Pago

    private enum OrderState { case processed, refunded }

    /// A thin `order` notification; the emulator is seeded with the order it points at.
    private static func mercadoPagoOrder(_ action: String, _ summary: String, status: OrderState) -> SendTestEvent {
        SendTestEvent(provider: .mercadopago, name: action, summary: summary) { input in
            let orderID = input.id ?? SendTestIDs.mercadoPagoOrder()
            // The order's payment keeps one id across its events, so order.refunded after
            // order.processed (same --id) refunds the payment that was paid.
            let paymentID = "PAY" + (orderID.hasPrefix("ORD") ? String(orderID.dropFirst(3)) : orderID)
            let amount = JSONString.quote(input.amount.decimalString)
            let now = JSONString.quote(SendTestIDs.timestamp(input.now))
            let (orderStatus, detail) = status == .processed ? ("processed", "accredited") : ("refunded", "refunded")
            var order = """
                {"id":\(JSONString.quote(orderID)),"type":"online","processing_mode":"automatic",\
                "external_reference":\(JSONString.quote(input.reference)),"total_amount":\(amount),\
                "total_paid_amount":\(amount),"currency":\(JSONString.quote(input.amount.currency)),\
                "user_id":"\(SendTestIDs.mercadoPagoUserID)","status":"\(orderStatus)","status_detail":"\(detail)",\
                "capture_mode":"automatic","created_date":\(now),"last_updated_date":\(now),\
                "transactions":{"payments":[{"id":\(JSONString.quote(paymentID)),"amount":\(amount),\
                "paid_amount":\(amount),"status":"\(orderStatus)","status_detail":"\(detail)",\
                "payment_method":{"id":"master","type":"credit_card","installments":1}}]
                """
            if status == .refunded {
                order += """
                    ,"refunds":[{"id":\(JSONString.quote("REF" + paymentID.dropFirst(3))),\
                    "transaction_id":\(JSONString.quote(paymentID)),"amount":\(amount),"status":"processed"}]
                    """
            }
            order += "}}"
            let notification = """
                {"action":\(JSONString.quote(action)),"api_version":"v1","data":{"id":\(JSONString.quote(orderID)),\
                "external_reference":\(JSONString.quote(input.reference)),"status":"\(orderStatus)",\
                "status_detail":"\(detail)","total_paid_amount":\(amount),"version":\(status == .processed ? 3 : 4)},\
                "date_created":\(now),"id":\(SendTestIDs.mercadoPagoNotification()),"live_mode":false,\
                "type":"order","user_id":"\(SendTestIDs.mercadoPagoUserID)"}
                """
            return mercadoPagoDelivery(
                input, dataID: orderID, topic: "order", body: Array(notification.utf8),
                seed: ("mercadopago/orders/" + orderID, Array(order.utf8)),
                ids: [("order", orderID), ("payment", paymentID), ("external_reference", input.reference),
                      ("amount", input.amount.description)])
        }
    }

    /// A thin classic `payment` notification; the emulator is seeded with the approved payment.
    private static func mercadoPagoPayment(_ action: String, _ summary: String) -> SendTestEvent {
        SendTestEvent(provider: .mercadopago, name: action, summary: summary) { input in
            let paymentID = input.id ?? SendTestIDs.mercadoPagoPayment()
            let now = JSONString.quote(SendTestIDs.timestamp(input.now))
            // Classic payments carry amounts as JSON numbers.
            let payment = """
                {"id":\(JSONString.isNumber(paymentID) ? paymentID : JSONString.quote(paymentID)),\
                "date_created":\(now),"date_approved":\(now),"date_last_updated":\(now),\
                "collector_id":\(SendTestIDs.mercadoPagoUserID),"operation_type":"regular_payment",\
                "payment_method_id":"visa","payment_type_id":"credit_card","status":"approved",\
                "status_detail":"accredited","currency_id":\(JSONString.quote(input.amount.currency)),\
                "transaction_amount":\(input.amount.decimalString),"transaction_amount_refunded":0,"captured":true,\
                "external_reference":\(JSONString.quote(input.reference)),"payer":{"id":"1284659970-send-test"}}
                """
            let notification = """
                {"action":\(JSONString.quote(action)),"api_version":"v1","data":{"id":\(JSONString.quote(paymentID))},\
                "date_created":\(now),"id":\(SendTestIDs.mercadoPagoNotification()),"live_mode":false,\
                "type":"payment","user_id":\(SendTestIDs.mercadoPagoUserID)}
                """
            return mercadoPagoDelivery(
                input, dataID: paymentID, topic: "payment", body: Array(notification.utf8),
                seed: ("mercadopago/payments/" + paymentID, Array(payment.utf8)),
                ids: [("payment", paymentID), ("external_reference", input.reference), ("amount", input.amount.description)])
        }
    }

    /// Signs a notification as Mercado Pago does: `data.id` in the query, the manifest over its
    /// lowercased form (current documentation), `x-request-id` and a millisecond `ts`.
    private static func mercadoPagoDelivery(
        _ input: SendTestInput, dataID: String, topic: String, body: [UInt8], seed: (String, [UInt8]),
        ids: [(String, String)]
    ) -> SendTestDelivery {
        let requestID = UUID().uuidString.lowercased()
        let ts = String(Int64(input.now.timeIntervalSince1970 * 1000))
        let signature = WebhookSigner.mercadoPagoSignature(
            secret: input.key, dataID: dataID.lowercased(), requestID: requestID, ts: ts)
        let encodedID = dataID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? dataID
        return SendTestDelivery(
            query: "data.id=\(encodedID)&type=\(topic)",
            headers: [("Content-Type", "application/json"), ("x-request-id", requestID), ("x-signature", signature)],
            body: body, seed: seed, ids: ids)
    }

    // MARK: PXP

    /// A Transaction event; the emulator is seeded with the transaction payhook confirms it by.
    private static func pxpTransaction(_ name: String, _ summary: String, state: String) -> SendTestEvent {
        SendTestEvent(provider: .pxp, name: name, summary: summary) { input in
            let transactionID = input.id ?? UUID().uuidString.lowercased()
            let now = JSONString.quote(SendTestIDs.timestamp(input.now))
            let amount = input.amount.decimalString
            let currency = JSONString.quote(input.amount.currency)
            let refused = state == "Refused"
            let stateData = refused ? #","stateData":{"code":"CRD005","message":"Refused by the issuer"}"# : ""
            let approval = refused ? "" : #","approvalCode":"083415""#
            let owner = #"{"merchant":\#(JSONString.quote(input.pxpMerchant)),"site":\#(JSONString.quote(input.pxpSite))}"#
            let transaction = """
                {"systemTransactionId":\(JSONString.quote(transactionID)),"state":"\(state)",\
                "stateMessage":"Transaction \(state)"\(stateData)\(approval),\
                "transactionMethod":{"intent":"\(state == "Captured" ? "Purchase" : "Authorisation")",\
                "fundingType":"Card","entryType":"Ecom"},"merchant":\(JSONString.quote(input.pxpMerchant)),\
                "site":\(JSONString.quote(input.pxpSite)),"merchantTransactionId":\(JSONString.quote(input.reference)),\
                "merchantTransactionDate":\(now),"amounts":{"transactionValue":\(amount),"currencyCode":\(currency)},\
                "shopper":{"id":"shopper-send-test"}}
                """
            let event = """
                {"eventCategory":"Transaction","eventDate":\(now),"eventData":{"state":"\(state)"\(stateData)\(approval),\
                "systemTransactionId":\(JSONString.quote(transactionID)),\
                "merchantTransactionId":\(JSONString.quote(input.reference)),\
                "amounts":{"transaction":\(amount),"currencyCode":\(currency)}},"eventOwner":\(owner)}
                """
            return pxpDelivery(input, body: Array(event.utf8), seed: ("pxp/transactions/" + transactionID, Array(transaction.utf8)),
                               ids: [("systemTransactionId", transactionID), ("merchantTransactionId", input.reference),
                                     ("amount", input.amount.description)])
        }
    }

    /// A Token event (field names UNCONFIRMED by PXP; the ones payhook's decoder reads).
    private static func pxpToken(_ name: String, _ summary: String, status: String) -> SendTestEvent {
        SendTestEvent(provider: .pxp, name: name, summary: summary) { input in
            let token = input.id ?? UUID().uuidString.lowercased()
            let event = """
                {"eventCategory":"Token","eventDate":\(JSONString.quote(SendTestIDs.timestamp(input.now))),\
                "eventData":{"gatewayTokenId":\(JSONString.quote(token)),"status":"\(status)","scheme":"Visa",\
                "maskedPrimaryAccountNumber":"411111******1111","expiryMonth":"03","expiryYear":"2030",\
                "shopper":{"id":\(JSONString.quote(input.reference))}},\
                "eventOwner":{"merchant":\(JSONString.quote(input.pxpMerchant)),"site":\(JSONString.quote(input.pxpSite))}}
                """
            return pxpDelivery(input, body: Array(event.utf8), seed: nil,
                               ids: [("gatewayTokenId", token), ("shopper", input.reference)])
        }
    }

    /// Signs as PXP does: request id + Unix-seconds timestamp + body, base64.
    private static func pxpDelivery(
        _ input: SendTestInput, body: [UInt8], seed: (String, [UInt8])?, ids: [(String, String)]
    ) -> SendTestDelivery {
        let requestID = UUID().uuidString.lowercased()
        let timestamp = String(Int64(input.now.timeIntervalSince1970))
        let signature = WebhookSigner.pxpSignature(
            key: input.key, algorithm: input.pxpAlgorithm, requestID: requestID, timestamp: timestamp, body: body)
        return SendTestDelivery(
            headers: [("Content-Type", "application/json"), ("X-Request-Id", requestID),
                      ("X-Signature-Timestamp", timestamp), ("X-Signature", signature)],
            body: body, seed: seed, ids: ids)
    }
}

/// Fresh ids in each provider's shape, and the timestamp format the bodies use.
enum SendTestIDs {
    /// The collector account of the emulator's Mercado Pago (`ProviderEmulator.Configuration`).
    static let mercadoPagoUserID = "1873904477"

    /// 16 upper-case letters and digits, like an Adyen `pspReference`.
    static func adyenReference() -> String { randomCharacters(16, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") }

    /// `ORD` and 26 Crockford base-32 characters, like Mercado Pago's order ids.
    static func mercadoPagoOrder() -> String { "ORD01" + randomCharacters(24, from: "0123456789ABCDEFGHJKMNPQRSTVWXYZ") }

    /// A classic payment id: a 12-digit number.
    static func mercadoPagoPayment() -> String { String(Int64.random(in: 100_000_000_000...999_999_999_999)) }

    /// A notification's own `id`, a number.
    static func mercadoPagoNotification() -> String { String(Int64.random(in: 10_000_000_000...99_999_999_999)) }

    /// A short reference for `--reference`'s default.
    static func reference() -> String { "send-test-" + randomCharacters(10, from: "abcdefghijklmnopqrstuvwxyz0123456789") }

    /// RFC 3339 UTC with milliseconds, as the providers write their dates.
    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    private static func randomCharacters(_ count: Int, from alphabet: String) -> String {
        let characters = Array(alphabet)
        return String((0..<count).map { _ in characters.randomElement() ?? "0" })
    }
}

extension JSONString {
    /// Whether `text` is a plain non-negative integer, written as a JSON number as it is.
    static func isNumber(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 18 && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } && (text == "0" || !text.hasPrefix("0"))
    }
}
