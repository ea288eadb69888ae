import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

@Suite("Emulator charge endpoints")
struct EmulatorChargeTests {
    static let mercadoPagoOrder = #"""
        {"type":"online","processing_mode":"automatic_async","external_reference":"sub-42-cycle-7","total_amount":"100.10",
         "payer":{"customer_id":"1284659970-cUsTmRk2"},
         "transactions":{"payments":[{"amount":"100.10","payment_method":{"id":"master","type":"credit_card"},
           "automatic_payments":{"payment_profile_id":"PP01ABC","retries":3},
           "stored_credential":{"payment_initiator":"merchant","reason":"recurring","first_payment":false,
             "previous_transaction_reference":"PAY01JQ4S4KY8HWQ6NA5PXB65B3D4"}}]}}
        """#

    func mercadoPagoHeaders(_ emulator: ProviderEmulator, key: String) -> [(String, String)] {
        [("Authorization", "Bearer \(emulator.configuration.mercadoPagoAccessToken)"),
         ("X-Idempotency-Key", key), ("Content-Type", "application/json")]
    }

    @Test("a Mercado Pago charge replayed with the same key returns the same body and executes once")
    func mercadoPagoReplay() async throws {
        try await withEmulator { emulator async throws in
            let headers = mercadoPagoHeaders(emulator, key: "charge-42-7-1")
            let first = try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder)
            let second = try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder)
            #expect(first.status == 201)
            #expect(second.status == 201)
            #expect(first.body == second.body)
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "charge-42-7-1") == 1)
            #expect(emulator.mercadoPago.replayedCharges(idempotencyKey: "charge-42-7-1") == 1)

            // The created order is served by GET and decodes with the real decoder.
            let created = try MercadoPagoOrderDecoder.decode(first.body)
            #expect(created.status == .captured)
            #expect(created.merchantReference == "sub-42-cycle-7")
            #expect(created.amount == (try Money(minorUnits: 10010, currency: "BRL")))
            let fetched = try await emulator.mercadoPagoClient().fetchOrder(id: created.providerOrderID)
            #expect(fetched == created)
        }
    }

    @Test("the same key with a different body is a conflict, and a missing key is refused")
    func mercadoPagoKeyMisuse() async throws {
        try await withEmulator { emulator async throws in
            let headers = mercadoPagoHeaders(emulator, key: "charge-1")
            _ = try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder)
            let changed = Self.mercadoPagoOrder.replacingOccurrences(of: "100.10", with: "200.00")
            #expect(try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: changed).status == 409)
            let keyless = [headers[0], headers[2]]
            #expect(try await emulator.send("POST", "/mercadopago/v1/orders", headers: keyless, body: Self.mercadoPagoOrder).status == 400)
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "charge-1") == 1)
        }
    }

    @Test("scripted results decide new charges in order, replays keep theirs")
    func mercadoPagoScript() async throws {
        try await withEmulator { emulator async throws in
            emulator.mercadoPago.scriptCharges([.declined(code: "insufficient_amount"), .pending])
            var statuses: [PaymentStatus?] = []
            for key in ["k1", "k2", "k3", "k1"] {
                let response = try await emulator.send("POST", "/mercadopago/v1/orders",
                                                       headers: mercadoPagoHeaders(emulator, key: key), body: Self.mercadoPagoOrder)
                let order = try MercadoPagoOrderDecoder.decode(response.body)
                statuses.append(order.status)
                if key == "k1" { #expect(order.providerStatusDetail == "insufficient_amount") }
            }
            #expect(statuses == [.declined, .pending, .captured, .declined])
        }
    }

    @Test("a charge answered after the deadline has executed; the retry with the same key replays it")
    func mercadoPagoTimeoutAfterExecuting() async throws {
        try await withEmulator { emulator async throws in
            emulator.mercadoPago.fail(next: 1, with: .timeout(after: longDelay), on: .createOrder, id: "charge-t")
            let headers = mercadoPagoHeaders(emulator, key: "charge-t")
            await #expect(throws: HTTPClientError.self) {
                _ = try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder,
                                            timeout: shortDeadline)
            }
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "charge-t") == 1)
            let retry = try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder)
            #expect(retry.status == 201)
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "charge-t") == 1)
            #expect(emulator.mercadoPago.replayedCharges(idempotencyKey: "charge-t") == 1)
        }
    }

    @Test("a 5xx fault does not execute the charge; the retry with the same key executes it once")
    func mercadoPagoFailureBeforeExecuting() async throws {
        try await withEmulator { emulator async throws in
            emulator.mercadoPago.fail(next: 1, with: .status(502), on: .createOrder)
            let headers = mercadoPagoHeaders(emulator, key: "charge-5")
            #expect(try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder).status == 502)
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "charge-5") == 0)
            #expect(try await emulator.send("POST", "/mercadopago/v1/orders", headers: headers, body: Self.mercadoPagoOrder).status == 201)
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "charge-5") == 1)
        }
    }

    @Test("an Adyen charge replays by Idempotency-Key and reports a scripted refusal")
    func adyenReplay() async throws {
        try await withEmulator { emulator async throws in
            emulator.adyen.scriptCharges([.declined(code: "12")])
            let body = """
                {"amount":{"currency":"EUR","value":1010},"merchantAccount":"\(emulator.configuration.adyenMerchantAccount)",
                 "reference":"sub-9-cycle-2","paymentMethod":{"type":"scheme","storedPaymentMethodId":"M5N7TQ4TG5PFWR50"},
                 "shopperReference":"shopper-9","shopperInteraction":"ContAuth","recurringProcessingModel":"Subscription",
                 "returnUrl":"https://payhook.invalid/adyen/return"}
                """
            let headers = [("X-API-Key", emulator.configuration.adyenAPIKey), ("Idempotency-Key", "adyen-9-2-1"),
                           ("Content-Type", "application/json")]
            let first = try await emulator.send("POST", "/adyen/v72/payments", headers: headers, body: body)
            let second = try await emulator.send("POST", "/adyen/v72/payments", headers: headers, body: body)
            #expect(first.status == 200)
            #expect(first.body == second.body)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
            #expect(json["resultCode"] as? String == "Refused")
            #expect(json["refusalReasonCode"] as? String == "12")
            #expect(emulator.adyen.executedCharges(idempotencyKey: "adyen-9-2-1") == 1)
            #expect(emulator.adyen.callCount(id: "adyen-9-2-1") == 2)
        }
    }

    @Test("a PXP charge replays by merchantTransactionId and its transaction is fetchable")
    func pxpReplay() async throws {
        try await withEmulator { emulator async throws in
            let body = """
                {"merchant":"\(emulator.configuration.pxpMerchant)","site":"\(emulator.configuration.pxpSite)",
                 "merchantTransactionId":"sub-77-cycle-4","merchantTransactionDate":"2025-06-20T08:51:02.826Z",
                 "transactionMethod":{"intent":"Purchase","entryType":"Ecom","fundingType":"Card"},
                 "amounts":{"transaction":100.10,"currencyCode":"EUR"},
                 "fundingData":{"card":{"gatewayTokenId":"7f46c09d-d1d1-4f94-9a88-6e8ac32e6341"}},
                 "recurring":{"processingModel":"MerchantInitiatedSubsequentRecurring"}}
                """
            let path = "/pxp/api/v1/transactions"
            var responses: [HTTPClientResponse] = []
            for requestID in ["r-1", "r-2"] {
                let signature = PXPRequestSigner.signature(
                    tokenValue: emulator.configuration.pxpTokenValue, timestamp: "1747731062", requestID: requestID,
                    method: "POST", path: path, body: Array(body.utf8))
                responses.append(try await emulator.send("POST", path, headers: [
                    ("Authorization", PXPRequestSigner.authorization(
                        tokenID: emulator.configuration.pxpTokenID, timestamp: "1747731062", signature: signature)),
                    ("X-Request-Id", requestID), ("X-Client-Id", emulator.configuration.pxpClientID),
                    ("Content-Type", "application/json"),
                ], body: body))
            }
            #expect(responses.map(\.status) == [200, 200])
            #expect(responses[0].body == responses[1].body)
            #expect(emulator.pxp.executedCharges(idempotencyKey: "sub-77-cycle-4") == 1)

            let created = try PXPTransactionDecoder.decode(responses[0].body)
            #expect(created.status == .captured)
            #expect(created.amount == (try Money(minorUnits: 10010, currency: "EUR")))
            let fetched = try await emulator.pxpClient().fetchPayment(id: created.providerPaymentID)
            #expect(fetched == created)
        }
    }
}
