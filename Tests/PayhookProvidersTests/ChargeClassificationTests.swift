import Foundation
import PayhookCore
import Synchronization
import Testing
@testable import PayhookProviders

@Suite("Charge classification tables")
struct ChargeClassificationTests {
    @Test("Mercado Pago: every row of the order table", arguments: [
        ("processed", nil, ChargeOutcome.succeeded),
        ("processed", "accredited", .succeeded),
        ("processing", "in_process", .pending),
        ("action_required", "waiting_payment", .pending),
        ("created", nil, .pending),
        ("failed", "insufficient_amount", .declinedSoft),
        ("failed", "processing_error", .declinedSoft),
        ("failed", "rejected_by_issuer", .declinedSoft),
        ("failed", "card_disabled", .declinedHard),
        ("failed", "invalid_card_token", .declinedHard),
        ("failed", "required_call_for_authorize", .declinedHard),
        ("failed", "high_risk", .declinedHard),
        ("failed", "max_attempts_exceeded", .declinedHard),
        ("failed", "a_detail_added_next_year", .declinedHard),
        ("failed", nil, .declinedHard),
        ("canceled", nil, .declinedHard),
        ("cancelled", nil, .declinedHard),
        ("expired", nil, .declinedHard),
        ("refunded", nil, .pending),
        ("a_status_added_next_year", nil, .pending),
    ] as [(String, String?, ChargeOutcome)])
    func mercadoPagoRow(status: String, detail: String?, expected: ChargeOutcome) {
        #expect(MercadoPagoChargeClassification.outcome(status: status, detail: detail) == expected)
    }

    @Test("Adyen: every row of the result-code table", arguments: [
        ("Authorised", nil, nil, ChargeOutcome.succeeded),
        ("Pending", nil, nil, .pending),
        ("Received", nil, nil, .pending),
        // Stop codes.
        ("Refused", "5", nil, .declinedHard), ("Refused", "6", nil, .declinedHard), ("Refused", "8", nil, .declinedHard),
        ("Refused", "14", nil, .declinedHard), ("Refused", "20", nil, .declinedHard), ("Refused", "22", nil, .declinedHard),
        ("Refused", "25", nil, .declinedHard), ("Refused", "26", nil, .declinedHard), ("Refused", "31", nil, .declinedHard),
        // Codes that need the shopper: hard for a merchant-initiated charge.
        ("Refused", "11", nil, .declinedHard), ("Refused", "24", nil, .declinedHard),
        ("Refused", "38", nil, .declinedHard), ("Refused", "42", nil, .declinedHard),
        // Retry codes.
        ("Refused", "2", nil, .declinedSoft), ("Refused", "4", nil, .declinedSoft), ("Refused", "9", nil, .declinedSoft),
        ("Refused", "12", nil, .declinedSoft), ("Refused", "28", nil, .declinedSoft), ("Refused", "29", nil, .declinedSoft),
        // Merchant advice codes 03 and 21 overrule a retry code.
        ("Refused", "12", "03", .declinedHard), ("Refused", "12", "21", .declinedHard),
        ("Refused", "12", "03: Do not try again", .declinedHard), ("Refused", "12", "21 : Payment Cancellation", .declinedHard),
        ("Refused", "12", "02: Cannot approve at this time, try again later", .declinedSoft),
        ("Error", "4", "03", .declinedHard),
        // Unknown codes are hard; no code is hard for a refusal and soft for a technical error.
        ("Refused", "27", nil, .declinedHard),
        ("Refused", nil, nil, .declinedHard),
        ("Cancelled", nil, nil, .declinedHard),
        ("Cancelled", "9", nil, .declinedSoft),
        ("Error", nil, nil, .declinedSoft),
        ("Error", "", nil, .declinedSoft),
        ("Error", "4", nil, .declinedSoft),
        ("Error", "6", nil, .declinedHard),
        // Action codes would need the shopper.
        ("RedirectShopper", nil, nil, .declinedHard), ("IdentifyShopper", nil, nil, .declinedHard),
        ("ChallengeShopper", nil, nil, .declinedHard), ("PresentToShopper", nil, nil, .declinedHard),
        ("AuthenticationNotRequired", nil, nil, .pending),
    ] as [(String, String?, String?, ChargeOutcome)])
    func adyenRow(resultCode: String, code: String?, advice: String?, expected: ChargeOutcome) {
        #expect(AdyenChargeClassification.outcome(resultCode: resultCode, refusalReasonCode: code, merchantAdviceCode: advice) == expected)
    }

    @Test("PXP: every row of the state table", arguments: [
        ("Authorised", nil, ChargeOutcome.succeeded),
        ("Captured", nil, .succeeded),
        ("Pending", nil, .pending),
        ("Refused", "CRD105", .declinedSoft),
        ("Refused", "51", .declinedSoft), ("Refused", "61", .declinedSoft), ("Refused", "65", .declinedSoft),
        ("Refused", "91", .declinedSoft), ("Refused", "96", .declinedSoft),
        ("Refused", "CRD999", .declinedHard),
        ("Refused", nil, .declinedHard),
        ("Rejected", "51", .declinedSoft),
        ("Rejected", nil, .declinedHard),
        ("Error", nil, .declinedSoft),
        ("Cancelled", nil, .declinedHard),
        // The rest of PXP's enum: every state that holds or took the money succeeded.
        ("Approved", nil, .succeeded), ("Updated", nil, .succeeded), ("Executed", nil, .succeeded),
        ("Confirmed", nil, .succeeded), ("Refunded", nil, .succeeded),
        // Outside the enum: no outcome, never a guess.
        ("Teleported", nil, nil), ("captured", nil, nil),
    ] as [(String, String?, ChargeOutcome?)])
    func pxpRow(state: String, code: String?, expected: ChargeOutcome?) {
        #expect(PXPChargeClassification.standard.outcome(state: state, code: code) == expected)
    }

    @Test("PXP: the soft codes are configurable")
    func pxpConfigurable() {
        let custom = PXPChargeClassification(softDeclineCodes: ["DNH"])
        #expect(custom.outcome(state: "Refused", code: "DNH") == .declinedSoft)
        #expect(custom.outcome(state: "Refused", code: "CRD105") == .declinedHard)
    }

    /// The status charge settlement records for the payment (or order) a successful charge made,
    /// until the webhook brings the row's own. For PXP it is the webhook's own reading of the
    /// state (PXPStateMapping): a status never goes back, so a settlement that said `captured`
    /// where the webhook says `authorised` would stand.
    @Test("a successful charge's payment status comes from its provider's table", arguments: [
        ("adyen", "Authorised", PaymentStatus.authorized),
        ("pxp", "Authorised", .authorized),
        ("pxp", "Approved", .authorized),
        ("pxp", "Updated", .authorized),
        ("pxp", "Captured", .captured),
        ("pxp", "Executed", .captured),
        ("pxp", "Confirmed", .captured),
        ("pxp", "Refunded", .authorized),
        ("mercadopago", "processed", .captured),
        ("mercadopago", "approved", .captured),
        ("mercadopago", "authorized", .authorized),
        ("mercadopago", "in_mediation", .authorized),
        ("mercadopago", "operator:succeeded", .authorized),
        ("pxp", "webhook:captured", .authorized),
        ("adyen", "operator:succeeded", .authorized),
        ("a_provider_added_next_year", "Authorised", .authorized),
    ])
    func successPaymentStatus(provider: String, providerStatus: String, expected: PaymentStatus) {
        #expect(ChargeResult.paymentStatus(ofSuccess: providerStatus, provider: provider) == expected)
    }

    @Test("PXP: a successful charge's settled status is the one the webhook mapping gives its state")
    func pxpSettlementAgreesWithWebhooks() {
        for state in ["Authorised", "Approved", "Updated", "Captured", "Executed", "Confirmed"] {
            #expect(PXPChargeClassification.standard.outcome(state: state, code: nil) == .succeeded)
            #expect(PXPChargeClassification.paymentStatus(ofSuccess: state) == PXPStateMapping.paymentStatus(state), "\(state)")
        }
    }

    @Test("no code is both soft and hard")
    func disjointSets() {
        #expect(MercadoPagoChargeClassification.softDetails.isDisjoint(with: MercadoPagoChargeClassification.hardDetails))
        let hard = AdyenChargeClassification.stopCodes.union(AdyenChargeClassification.shopperCodes)
        #expect(AdyenChargeClassification.retryCodes.isDisjoint(with: hard))
    }

    @Test("Mercado Pago: the failed payment's detail wins over the order's, and becomes the decline code")
    func mercadoPagoResult() throws {
        let order = #"""
            {"id":"ORD1","status":"failed","status_detail":"failed","transactions":{"payments":[
              {"id":"PAY1","status":"failed","status_detail":"insufficient_amount"}]}}
            """#
        let result = try MercadoPagoChargeClassification.result(orderJSON: Array(order.utf8))
        #expect(result == ChargeResult(outcome: .declinedSoft, providerPaymentID: "ORD1", providerStatus: "failed",
                                       declineCode: "insufficient_amount"))
        let bare = try MercadoPagoChargeClassification.result(orderJSON: Array(#"{"id":"ORD2","status":"failed","status_detail":"high_risk"}"#.utf8))
        #expect(bare.outcome == .declinedHard)
        #expect(bare.declineCode == "high_risk")
        let approved = try MercadoPagoChargeClassification.result(
            orderJSON: Array(#"{"id":"ORD3","status":"processed","status_detail":"accredited"}"#.utf8))
        #expect(approved.declineCode == nil)
        #expect(throws: PayloadError.self) { try MercadoPagoChargeClassification.result(orderJSON: Array(#"{"id":"ORD4"}"#.utf8)) }
        // An answer in another currency than the charge's is no result: the outcome stays unknown.
        let otherCurrency = Array(#"{"id":"ORD5","status":"processed","currency":"ARS","total_amount":"100.10"}"#.utf8)
        #expect(throws: PayloadError(provider: .mercadopago, code: .invalidField, field: "currency")) {
            try MercadoPagoChargeClassification.result(orderJSON: otherCurrency, expectedCurrency: "BRL")
        }
        #expect(try MercadoPagoChargeClassification.result(orderJSON: otherCurrency, expectedCurrency: "ARS").outcome == .succeeded)
    }

    @Test("Adyen: the decline code carries the merchant advice code")
    func adyenResult() throws {
        let refused = #"""
            {"pspReference":"V4HZ4RBFJGXXGN82","resultCode":"Refused","refusalReason":"Not enough balance",
             "refusalReasonCode":"12","additionalData":{"merchantAdviceCode":"03: Do not try again"}}
            """#
        #expect(try AdyenChargeClassification.result(paymentJSON: Array(refused.utf8)) == ChargeResult(
            outcome: .declinedHard, providerPaymentID: "V4HZ4RBFJGXXGN82", providerStatus: "Refused", declineCode: "12;mac=03"))
        let error = #"{"pspReference":"X","resultCode":"Error","refusalReason":"Acquirer Error"}"#
        #expect(try AdyenChargeClassification.result(paymentJSON: Array(error.utf8)) == ChargeResult(
            outcome: .declinedSoft, providerPaymentID: "X", providerStatus: "Error", declineCode: nil))
    }
}

@Suite("Charge requests")
struct ChargeRequestTests {
    @Test("Mercado Pago: the order body, exact amounts as decimal strings")
    func mercadoPagoBody() throws {
        let body = MercadoPagoAPIClient.chargeBody(
            token: "PP01", customerID: "1284659970-cUsTmRk2", previousTransactionReference: "PAY9",
            amount: try Money(minorUnits: 10010, currency: "BRL"), reference: "sub-42-cycle-7")
        #expect(body.rendered == #"{"type":"online","processing_mode":"automatic_async","external_reference":"sub-42-cycle-7","#
            + #""total_amount":"100.10","currency":"BRL","payer":{"customer_id":"1284659970-cUsTmRk2"},"transactions":{"payments":[{"#
            + #""amount":"100.10","automatic_payments":{"payment_profile_id":"PP01"},"stored_credential":{"#
            + #""payment_initiator":"merchant","reason":"recurring","first_payment":false,"#
            + #""previous_transaction_reference":"PAY9"}}]}}"#)
        let first = MercadoPagoAPIClient.chargeBody(
            token: "PP01", customerID: "c", previousTransactionReference: nil,
            amount: try Money(minorUnits: 1500, currency: "CLP"), reference: "r")
        #expect(first.rendered.contains(#""total_amount":"1500","currency":"CLP""#), "the subscription's currency is sent, never dropped")
        #expect(!first.rendered.contains("previous_transaction_reference"))
        #expect(!first.rendered.contains("subscription_data"))
        #expect(!first.rendered.contains("payment_method"), "no card token in a merchant-initiated charge")
    }

    @Test("Mercado Pago: a charge with its billing cycle carries a payment-level subscription_data", arguments: [
        (RecurringBilling.PeriodUnit.month, 1, Int?.some(12), #""subscription_sequence":{"number":3,"total":12},"invoice_period":{"type":"monthly","period":1}"#),
        (.week, 2, nil, #""subscription_sequence":{"number":3},"invoice_period":{"type":"weekly","period":2}"#),
        (.day, 30, nil, #""subscription_sequence":{"number":3},"invoice_period":{"type":"daily","period":30}"#),
    ] as [(RecurringBilling.PeriodUnit, Int, Int?, String)])
    func mercadoPagoSubscriptionData(unit: RecurringBilling.PeriodUnit, period: Int, total: Int?, expected: String) throws {
        let billing = RecurringBilling(invoiceID: "sub-42-c3", billingDate: "2026-03-01", sequenceNumber: 3,
                                       sequenceTotal: total, unit: unit, period: period)
        let body = MercadoPagoAPIClient.chargeBody(
            token: "PP01", customerID: "c", previousTransactionReference: "PAY9", billing: billing,
            amount: try Money(minorUnits: 10010, currency: "BRL"), reference: "sub-42-c3")
        #expect(body.rendered.hasSuffix(#""previous_transaction_reference":"PAY9"},"subscription_data":{"invoice_id":"sub-42-c3","#
            + #""billing_date":"2026-03-01","# + expected + "}}]}}"))
    }

    @Test("Adyen: the payment body, amount in minor units")
    func adyenBody() throws {
        let body = try AdyenAPIClient.chargeBody(
            token: "M5N7TQ4TG5PFWR50", shopperReference: "shopper-9", amount: try Money(minorUnits: 1010, currency: "EUR"),
            reference: "sub-9-cycle-2", merchantAccount: "PayhookECOM")
        #expect(body.rendered == #"{"amount":{"currency":"EUR","value":1010},"merchantAccount":"PayhookECOM","#
            + #""reference":"sub-9-cycle-2","paymentMethod":{"type":"scheme","storedPaymentMethodId":"M5N7TQ4TG5PFWR50"},"#
            + #""shopperReference":"shopper-9","shopperInteraction":"ContAuth","recurringProcessingModel":"Subscription","#
            + #""returnUrl":"https://payhook.invalid/adyen/return"}"#)
    }

    /// PXP's `MerchantInitiatedInitialRecurring` is the setup transaction that saves the card
    /// (https://developer.pxp.io/guides/transactions/e-commerce/recurring-payments); payhook
    /// charges cards saved elsewhere, so even its first charge is a subsequent one.
    @Test("PXP: the transaction body, with the processing model from the reason, never the setup model", arguments: [
        (StoredCredential.Reason.recurring, StoredCredential.Sequence.subsequent, "MerchantInitiatedSubsequentRecurring"),
        (.recurring, .initial, "MerchantInitiatedSubsequentRecurring"),
        (.resubmission, .subsequent, "MerchantInitiatedResubmission"),
        (.resubmission, .initial, "MerchantInitiatedResubmission"),
    ])
    func pxpBody(reason: StoredCredential.Reason, sequence: StoredCredential.Sequence, model: String) throws {
        let credential = StoredCredential(token: "tok-1", shopperReference: "Shopper_01", previousTransactionReference: "sys-1",
                                          reason: reason, sequence: sequence)
        let body = PXPAPIClient.chargeBody(
            merchant: "PAYHOOK-1", site: "SITE-EU", merchantTransactionID: "sub-77-cycle-4",
            date: Date(timeIntervalSince1970: 1_747_731_062.826), credential: credential,
            amount: try Money(minorUnits: 10010, currency: "EUR"))
        #expect(body.rendered == #"{"merchant":"PAYHOOK-1","site":"SITE-EU","merchantTransactionId":"sub-77-cycle-4","#
            + #""merchantTransactionDate":"2025-05-20T08:51:02.826Z","#
            + #""transactionMethod":{"intent":"Purchase","entryType":"Ecom","fundingType":"Card"},"#
            + #""amounts":{"transaction":100.10,"currencyCode":"EUR"},"fundingData":{"card":{"gatewayTokenId":"tok-1"}},"#
            + #""shopper":{"id":"Shopper_01"},"recurring":{"processingModel":"\#(model)","previousTransactionReference":"sys-1"}}"#)
    }

    @Test("idempotency keys: 1 to 64 printable ASCII characters", arguments: [
        ("k", true), (String(repeating: "a", count: 64), true), ("sub-42_cycle.7:attempt/1", true),
        ("", false), (String(repeating: "a", count: 65), false), ("with space", false), ("tab\t", false), ("ñ", false),
    ])
    func idempotencyKeys(key: String, valid: Bool) {
        var thrown: ProviderAPIError?
        do { try ProviderAPIRequest.checkIdempotencyKey(key, operation: "t") } catch { thrown = error }
        #expect((thrown == nil) == valid)
        #expect(thrown.map { $0.kind == .invalidResponse && !$0.isRetryable } ?? true)
    }

    @Test("Mercado Pago: a 402 whose body is a failed order is a decline; a 402 without an order is invalidResponse")
    func mercadoPago402() async throws {
        let failed = #"{"id":"ORD1","status":"failed","transactions":{"payments":[{"status":"failed","status_detail":"card_disabled"}]}}"#
        let withOrder = CannedHTTPClient(status: 402, body: failed)
        let client = MercadoPagoAPIClient(baseURL: try #require(URL(string: "http://127.0.0.1:9/mp")), accessToken: "tok",
                                          http: withOrder)
        let credential = StoredCredential(token: "PP1", customerID: "c")
        let amount = try Money(minorUnits: 100, currency: "BRL")
        let result = try await client.charge(storedCredential: credential, amount: amount, reference: "r", idempotencyKey: "k")
        #expect(result.outcome == .declinedHard)
        #expect(result.declineCode == "card_disabled")
        let sent = try #require(withOrder.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.url.absoluteString == "http://127.0.0.1:9/mp/v1/orders")
        #expect(sent.headers.contains { $0.0 == "X-Idempotency-Key" && $0.1 == "k" })

        let plain = MercadoPagoAPIClient(baseURL: try #require(URL(string: "http://127.0.0.1:9/mp")), accessToken: "tok",
                                         http: CannedHTTPClient(status: 402, body: #"{"message":"payment required"}"#))
        var thrown: ProviderAPIError?
        do { _ = try await plain.charge(storedCredential: credential, amount: amount, reference: "r", idempotencyKey: "k") } catch { thrown = error }
        #expect(thrown?.kind == .invalidResponse)
    }
}

/// Answers every request with one canned response and remembers the requests.
final class CannedHTTPClient: HTTPClient {
    private let status: Int
    private let body: [UInt8]
    private let sent = Mutex<[HTTPClientRequest]>([])

    init(status: Int, body: String) {
        self.status = status
        self.body = Array(body.utf8)
    }

    var requests: [HTTPClientRequest] { sent.withLock { $0 } }

    func send(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        sent.withLock { $0.append(request) }
        return HTTPClientResponse(status: status, body: body)
    }
}

@Suite("PXP lookup answers")
struct PXPLookupAnswerTests {
    func client(_ http: CannedHTTPClient) throws -> PXPAPIClient {
        PXPAPIClient(baseURL: try #require(URL(string: "http://127.0.0.1:9/pxp/api/v1")), clientID: "c", tokenID: "t",
                     tokenValue: "v", merchant: "M1", site: "S1", http: http)
    }

    static let transaction = #"{"systemTransactionId":"sys-1","state":"Authorised","merchantTransactionId":"k-1","amounts":{"transactionValue":10.5,"currencyCode":"EUR"}}"#

    @Test("only an empty list is notFound", arguments: ["[]", #"{"transactions":[]}"#, #"{"items":[]}"#, #"{"data":[]}"#])
    func emptyLists(body: String) async throws {
        #expect(try await client(CannedHTTPClient(status: 200, body: body)).lookUpCharge(idempotencyKey: "k-1", providerPaymentID: nil) == .notFound)
    }

    @Test("a single transaction, a list or a wrapped list with the key is found", arguments: [
        transaction, "[\(transaction)]", #"{"transactions":[\#(transaction)]}"#,
    ])
    func found(body: String) async throws {
        let http = CannedHTTPClient(status: 200, body: body)
        let result = try #require(try await client(http).lookUpCharge(idempotencyKey: "k-1", providerPaymentID: nil).result)
        #expect(result.outcome == .succeeded)
        #expect(result.providerPaymentID == "sys-1")
        #expect(http.requests.first?.url.absoluteString == "http://127.0.0.1:9/pxp/api/v1/transactions/M1/S1?merchantTransactionId=k-1")
    }

    @Test("a 404, an object that is no transaction, or a list of other transactions is an unknown outcome", arguments: [
        (404, #"{"status":404}"#), (200, "{}"), (200, #"{"message":"ok"}"#), (200, "[\(transaction)]".replacingOccurrences(of: "k-1", with: "k-2")),
        (200, "null"), (200, "not json"),
    ] as [(Int, String)])
    func unknown(status: Int, body: String) async throws {
        let client = try client(CannedHTTPClient(status: status, body: body))
        var thrown: ProviderAPIError?
        do { _ = try await client.lookUpCharge(idempotencyKey: "k-1", providerPaymentID: nil) } catch { thrown = error }
        #expect(thrown?.kind == .invalidResponse)
    }

    @Test("fetchPayment reads the one transaction with the systemTransactionId, request form or answer form of the amount", arguments: [
        transaction, transaction.replacingOccurrences(of: "transactionValue", with: "transaction"),
    ])
    func fetch(body: String) async throws {
        let http = CannedHTTPClient(status: 200, body: "[\(body)]")
        let payment = try await client(http).fetchPayment(id: "sys-1")
        #expect(payment.amount == (try Money(minorUnits: 1050, currency: "EUR")))
        #expect(payment.status == .authorized)
        #expect(http.requests.first?.url.absoluteString == "http://127.0.0.1:9/pxp/api/v1/transactions/M1/S1?systemTransactionId=sys-1")
        let empty = try client(CannedHTTPClient(status: 200, body: "[]"))
        var thrown: ProviderAPIError?
        do { _ = try await empty.fetchPayment(id: "sys-1") } catch { thrown = error }
        #expect(thrown?.kind == .notFound)
    }
}

extension ChargeLookup {
    /// The charge of a `.found` answer, else nil.
    fileprivate var result: ChargeResult? {
        if case .found(let result) = self { result } else { nil }
    }
}
