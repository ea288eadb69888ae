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
            var item: [JSONOutput.Member] = [
                .init("additionalData", .object(additionalData.map { JSONOutput.Member($0.0, .string($0.1)) })),
                .init("amount", .object([.init("currency", .string(input.amount.currency)), .init("value", .number(String(value)))])),
                .init("eventCode", .string(eventCode)), .init("eventDate", .string(SendTestIDs.timestamp(input.now))),
                .init("merchantAccountCode", .string(input.adyenMerchantAccount)),
                .init("merchantReference", .string(input.reference)),
            ]
            if let originalReference { item.append(.init("originalReference", .string(originalReference))) }
            if eventCode == "AUTHORISATION" {
                item.append(.init("operations", .array(["CANCEL", "CAPTURE", "REFUND"].map(JSONOutput.string))))
            }
            item += [
                .init("paymentMethod", .string("visa")), .init("pspReference", .string(pspReference)),
                .init("reason", .string(reason ?? (eventCode == "AUTHORISATION" ? "083415:1111:03/2030" : ""))),
                .init("success", .string("true")),
            ]
            let body = JSONOutput.object([
                .init("live", .string("false")),
                .init("notificationItems", .array([.object([.init("NotificationRequestItem", .object(item))])])),
            ]).bytes
            var ids = [("pspReference", pspReference)]
            if let originalReference { ids.append(("originalReference", originalReference)) }
            ids += [("merchantReference", input.reference), ("amount", input.amount.description)]
            return SendTestDelivery(headers: [("Content-Type", "application/json")], body: body, seed: nil, ids: ids)
        }
    }

    /// A tokenization webhook, signed over the raw body in the `HmacSignature` header.
    private static func adyenToken(_ type: String, _ summary: String, operation: String) -> SendTestEvent {
        SendTestEvent(provider: .adyen, name: type, summary: summary) { input in
            let token = input.id ?? SendTestIDs.adyenReference()
            let eventID = SendTestIDs.adyenReference()
            let body = JSONOutput.object([
                .init("createdAt", .string(SendTestIDs.timestamp(input.now))),
                .init("data", .object([
                    .init("merchantAccount", .string(input.adyenMerchantAccount)), .init("operation", .string(operation)),
                    .init("shopperReference", .string(input.reference)), .init("storedPaymentMethodId", .string(token)),
                    .init("type", .string("visa")),
                ])),
                .init("environment", .string("test")), .init("eventId", .string(eventID)), .init("type", .string(type)),
            ]).bytes
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
            let amount = JSONOutput.string(input.amount.decimalString)
            let now = JSONOutput.string(SendTestIDs.timestamp(input.now))
            let (orderStatus, detail) = status == .processed ? ("processed", "accredited") : ("refunded", "refunded")
            var transactions: [JSONOutput.Member] = [.init("payments", .array([.object([
                .init("id", .string(paymentID)), .init("amount", amount), .init("paid_amount", amount),
                .init("status", .string(orderStatus)), .init("status_detail", .string(detail)),
                .init("payment_method", .object([
                    .init("id", .string("master")), .init("type", .string("credit_card")), .init("installments", .int(1)),
                ])),
            ])]))]
            if status == .refunded {
                transactions.append(.init("refunds", .array([.object([
                    .init("id", .string("REF" + String(paymentID.dropFirst(3)))), .init("transaction_id", .string(paymentID)),
                    .init("amount", amount), .init("status", .string("processed")),
                ])])))
            }
            let order: JSONOutput = .object([
                .init("id", .string(orderID)), .init("type", .string("online")), .init("processing_mode", .string("automatic")),
                .init("external_reference", .string(input.reference)), .init("total_amount", amount),
                .init("total_paid_amount", amount), .init("currency", .string(input.amount.currency)),
                .init("user_id", .string(SendTestIDs.mercadoPagoUserID)), .init("status", .string(orderStatus)),
                .init("status_detail", .string(detail)), .init("capture_mode", .string("automatic")),
                .init("created_date", now), .init("last_updated_date", now), .init("transactions", .object(transactions)),
            ])
            let notification: JSONOutput = .object([
                .init("action", .string(action)), .init("api_version", .string("v1")),
                .init("data", .object([
                    .init("id", .string(orderID)), .init("external_reference", .string(input.reference)),
                    .init("status", .string(orderStatus)), .init("status_detail", .string(detail)),
                    .init("total_paid_amount", amount), .init("version", .int(status == .processed ? 3 : 4)),
                ])),
                .init("date_created", now), .init("id", .number(SendTestIDs.mercadoPagoNotification())),
                .init("live_mode", .bool(false)), .init("type", .string("order")),
                .init("user_id", .string(SendTestIDs.mercadoPagoUserID)),
            ])
            return mercadoPagoDelivery(
                input, dataID: orderID, topic: "order", body: notification.bytes,
                seed: ("mercadopago/orders/" + orderID, order.bytes),
                ids: [("order", orderID), ("payment", paymentID), ("external_reference", input.reference),
                      ("amount", input.amount.description)])
        }
    }

    /// A thin classic `payment` notification; the emulator is seeded with the approved payment.
    private static func mercadoPagoPayment(_ action: String, _ summary: String) -> SendTestEvent {
        SendTestEvent(provider: .mercadopago, name: action, summary: summary) { input in
            let paymentID = input.id ?? SendTestIDs.mercadoPagoPayment()
            let now = JSONOutput.string(SendTestIDs.timestamp(input.now))
            // Classic payments carry amounts as JSON numbers.
            let payment: JSONOutput = .object([
                .init("id", JSONString.isNumber(paymentID) ? .number(paymentID) : .string(paymentID)),
                .init("date_created", now), .init("date_approved", now), .init("date_last_updated", now),
                .init("collector_id", .number(SendTestIDs.mercadoPagoUserID)), .init("operation_type", .string("regular_payment")),
                .init("payment_method_id", .string("visa")), .init("payment_type_id", .string("credit_card")),
                .init("status", .string("approved")), .init("status_detail", .string("accredited")),
                .init("currency_id", .string(input.amount.currency)),
                .init("transaction_amount", .number(input.amount.decimalString)), .init("transaction_amount_refunded", .int(0)),
                .init("captured", .bool(true)), .init("external_reference", .string(input.reference)),
                .init("payer", .object([.init("id", .string("1284659970-send-test"))])),
            ])
            let notification: JSONOutput = .object([
                .init("action", .string(action)), .init("api_version", .string("v1")),
                .init("data", .object([.init("id", .string(paymentID))])), .init("date_created", now),
                .init("id", .number(SendTestIDs.mercadoPagoNotification())), .init("live_mode", .bool(false)),
                .init("type", .string("payment")), .init("user_id", .number(SendTestIDs.mercadoPagoUserID)),
            ])
            return mercadoPagoDelivery(
                input, dataID: paymentID, topic: "payment", body: notification.bytes,
                seed: ("mercadopago/payments/" + paymentID, payment.bytes),
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
            let now = JSONOutput.string(SendTestIDs.timestamp(input.now))
            let amount = JSONOutput.number(input.amount.decimalString)
            let currency = JSONOutput.string(input.amount.currency)
            // After the state, in both documents: why it was refused, or the approval code.
            let outcome: [JSONOutput.Member] = state == "Refused"
                ? [.init("stateData", .object([.init("code", .string("CRD005")), .init("message", .string("Refused by the issuer"))]))]
                : [.init("approvalCode", .string("083415"))]
            var transaction: [JSONOutput.Member] = [
                .init("systemTransactionId", .string(transactionID)), .init("state", .string(state)),
                .init("stateMessage", .string("Transaction \(state)")),
            ]
            transaction += outcome
            transaction += [
                .init("transactionMethod", .object([
                    .init("intent", .string(state == "Captured" ? "Purchase" : "Authorisation")),
                    .init("fundingType", .string("Card")), .init("entryType", .string("Ecom")),
                ])),
                .init("merchant", .string(input.pxpMerchant)), .init("site", .string(input.pxpSite)),
                .init("merchantTransactionId", .string(input.reference)), .init("merchantTransactionDate", now),
                .init("amounts", .object([.init("transactionValue", amount), .init("currencyCode", currency)])),
                .init("shopper", .object([.init("id", .string("shopper-send-test"))])),
            ]
            var eventData: [JSONOutput.Member] = [.init("state", .string(state))]
            eventData += outcome
            eventData += [
                .init("systemTransactionId", .string(transactionID)), .init("merchantTransactionId", .string(input.reference)),
                .init("amounts", .object([.init("transaction", amount), .init("currencyCode", currency)])),
            ]
            let event: JSONOutput = .object([
                .init("eventCategory", .string("Transaction")), .init("eventDate", now), .init("eventData", .object(eventData)),
                .init("eventOwner", .object([.init("merchant", .string(input.pxpMerchant)), .init("site", .string(input.pxpSite))])),
            ])
            return pxpDelivery(input, body: event.bytes, seed: ("pxp/transactions/" + transactionID, JSONOutput.object(transaction).bytes),
                               ids: [("systemTransactionId", transactionID), ("merchantTransactionId", input.reference),
                                     ("amount", input.amount.description)])
        }
    }

    /// A Token event (field names UNCONFIRMED by PXP; the ones payhook's decoder reads).
    private static func pxpToken(_ name: String, _ summary: String, status: String) -> SendTestEvent {
        SendTestEvent(provider: .pxp, name: name, summary: summary) { input in
            let token = input.id ?? UUID().uuidString.lowercased()
            let event: JSONOutput = .object([
                .init("eventCategory", .string("Token")), .init("eventDate", .string(SendTestIDs.timestamp(input.now))),
                .init("eventData", .object([
                    .init("gatewayTokenId", .string(token)), .init("status", .string(status)), .init("scheme", .string("Visa")),
                    .init("maskedPrimaryAccountNumber", .string("411111******1111")), .init("expiryMonth", .string("03")),
                    .init("expiryYear", .string("2030")), .init("shopper", .object([.init("id", .string(input.reference))])),
                ])),
                .init("eventOwner", .object([.init("merchant", .string(input.pxpMerchant)), .init("site", .string(input.pxpSite))])),
            ])
            return pxpDelivery(input, body: event.bytes, seed: nil,
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
