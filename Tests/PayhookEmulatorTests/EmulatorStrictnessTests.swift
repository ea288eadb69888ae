import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

/// The emulator refuses what the real APIs refuse, in each provider's error shape, and executes
/// nothing for it: a client that sends a wrong request fails a test instead of passing.
@Suite("Emulator strictness: requests the real APIs would refuse")
struct EmulatorStrictnessTests {
    static let mercadoPagoCharge = #"""
        {"type":"online","processing_mode":"automatic_async","external_reference":"sub-1-c1","total_amount":"10.00",
         "payer":{"customer_id":"c-1"},
         "transactions":{"payments":[{"amount":"10.00","automatic_payments":{"payment_profile_id":"PP1"},
           "stored_credential":{"payment_initiator":"merchant","reason":"recurring","first_payment":false,
             "previous_transaction_reference":"PAY01"},
           "subscription_data":{"invoice_id":"sub-1-c1","billing_date":"2030-01-01",
             "subscription_sequence":{"number":1,"total":12},"invoice_period":{"type":"monthly","period":1}}}]}}
        """#

    static func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("Mercado Pago: the reference's merchant-initiated order is accepted")
    func mercadoPagoValid() async throws {
        try await withEmulator { emulator async throws in
            let response = try await emulator.send("POST", "/mercadopago/v1/orders", headers: [
                ("Authorization", "Bearer \(emulator.configuration.mercadoPagoAccessToken)"), ("X-Idempotency-Key", "k-valid"),
            ], body: Self.mercadoPagoCharge)
            #expect(response.status == 201)
            #expect(emulator.mercadoPago.totalExecutedCharges == 1)
        }
    }

    @Test("Mercado Pago: the subscription in automatic_payments.subscription, as the recurring-payments page shows it, is accepted too")
    func mercadoPagoAutomaticPaymentsSubscription() async throws {
        try await withEmulator { emulator async throws in
            let body = Self.mercadoPagoCharge.replacingOccurrences(
                of: #""automatic_payments":{"payment_profile_id":"PP1"}"#,
                with: #""automatic_payments":{"payment_profile_id":"PP1","subscription":{"id":"subscription-1","sequence":{"number":1,"total":12},"invoice":{"id":"invoice-1","billing_date":"2026-08-26","period":{"interval":1,"type":"month"}}}}"#)
            #expect(body != Self.mercadoPagoCharge)
            let response = try await emulator.send("POST", "/mercadopago/v1/orders", headers: [
                ("Authorization", "Bearer \(emulator.configuration.mercadoPagoAccessToken)"), ("X-Idempotency-Key", "k-aps"),
            ], body: body)
            #expect(response.status == 201)
            #expect(emulator.mercadoPago.totalExecutedCharges == 1)
        }
    }

    @Test("Mercado Pago: a wrong merchant-initiated order is a 400 with message, error, status and cause", arguments: [
        (#""processing_mode":"automatic_async""#, #""processing_mode":"automatic""#, "invalid_processing_mode"),
        (#""processing_mode":"automatic_async""#, #""processing_mode":"batch""#, "invalid_processing_mode"),
        (#""first_payment":false"#, #""first_payment":true"#, "invalid_stored_credential"),
        (#""previous_transaction_reference":"PAY01""#, #""previous_transaction_reference":"ORD01JQ4S4KY8HWQ6NA5PXB65B3D3""#, "invalid_stored_credential"),
        (#""automatic_payments":{"payment_profile_id":"PP1"}"#, #""automatic_payments":{"payment_profile_id":"PP1"},"payment_method":{"token":"card-token"}"#, "invalid_payment_method"),
        (#""automatic_payments":{"payment_profile_id":"PP1"}"#, #""automatic_payments":{"payment_profile_id":"PP1","subscription":{"id":"s","sequence":{"number":0}}}"#, "invalid_automatic_payments"),
        (#""automatic_payments":{"payment_profile_id":"PP1"}"#, #""automatic_payments":{"payment_profile_id":"PP1","subscription":"s"}"#, "invalid_automatic_payments"),
        // A card id (payment_method.card_id, card.id: numeric) is not a payment profile.
        (#""payment_profile_id":"PP1""#, #""payment_profile_id":"9120384756""#, "invalid_payment_profile_id"),
        (#""billing_date":"2030-01-01""#, #""billing_date":"01/01/2030""#, "invalid_subscription_data"),
        (#""number":1,"total":12"#, #""number":0"#, "invalid_subscription_data"),
        (#""type":"monthly""#, #""type":"fortnightly""#, "invalid_subscription_data"),
    ])
    func mercadoPagoRefused(from: String, to: String, cause: String) async throws {
        try await withEmulator { emulator async throws in
            let body = Self.mercadoPagoCharge.replacingOccurrences(of: from, with: to)
            #expect(body != Self.mercadoPagoCharge)
            let response = try await emulator.send("POST", "/mercadopago/v1/orders", headers: [
                ("Authorization", "Bearer \(emulator.configuration.mercadoPagoAccessToken)"), ("X-Idempotency-Key", "k-bad"),
            ], body: body)
            #expect(response.status == 400)
            let error = try Self.json(response.body)
            #expect(error["error"] as? String == "bad_request")
            #expect(error["status"] as? Int == 400)
            #expect((error["message"] as? String)?.isEmpty == false)
            let causes = try #require(error["cause"] as? [[String: Any]])
            #expect(causes.first?["code"] as? String == cause)
            #expect(emulator.mercadoPago.totalExecutedCharges == 0)
        }
    }

    static let pxpCharge = #"""
        {"merchant":"PAYHOOK-1","site":"SITE-EU","merchantTransactionId":"sub-1-c1-a1","merchantTransactionDate":"2030-01-01T10:00:00.000Z",
         "transactionMethod":{"intent":"Purchase","entryType":"Ecom","fundingType":"Card"},
         "amounts":{"transaction":10.00,"currencyCode":"EUR"},"fundingData":{"card":{"gatewayTokenId":"tok-1"}},
         "recurring":{"processingModel":"MerchantInitiatedSubsequentRecurring"}}
        """#

    func pxpPost(_ emulator: ProviderEmulator, _ body: String) async throws -> HTTPClientResponse {
        let path = "/pxp/api/v1/transactions"
        let signature = PXPRequestSigner.signature(
            tokenValue: emulator.configuration.pxpTokenValue, timestamp: "1893492000", requestID: "r-1", method: "POST",
            path: path, body: Array(body.utf8))
        return try await emulator.send("POST", path, headers: [
            ("Authorization", PXPRequestSigner.authorization(tokenID: emulator.configuration.pxpTokenID, timestamp: "1893492000",
                                                             signature: signature)),
            ("X-Request-Id", "r-1"), ("X-Client-Id", emulator.configuration.pxpClientID),
        ], body: body)
    }

    @Test("PXP: a charge outside PXP's rules is a 400 in PXP's error body", arguments: [
        (#""merchantTransactionId":"sub-1-c1-a1""#, #""merchantTransactionId":"\#(String(repeating: "k", count: 51))""#),
        (#""transaction":10.00"#, #""transactionValue":10.00"#),
        (#""MerchantInitiatedSubsequentRecurring""#, #""SubsequentRecurring""#),
        (#""intent":"Purchase""#, #""intent":"Sale""#),
        (#""fundingData":{"card":{"gatewayTokenId":"tok-1"}},"#, ""),
    ])
    func pxpRefused(from: String, to: String) async throws {
        try await withEmulator { emulator async throws in
            #expect(try await pxpPost(emulator, Self.pxpCharge).status == 200)
            let body = Self.pxpCharge.replacingOccurrences(of: from, with: to).replacingOccurrences(of: "sub-1-c1-a1", with: "sub-1-c1-a2")
            let response = try await pxpPost(emulator, body)
            #expect(response.status == 400)
            let error = try Self.json(response.body)
            #expect(error["status"] as? Int == 400)
            #expect((error["detail"] as? String)?.isEmpty == false)
            #expect(emulator.pxp.totalExecutedCharges == 1)
        }
    }

    static let adyenPayment = #"""
        {"amount":{"currency":"EUR","value":1010},"merchantAccount":"PayhookECOM","reference":"sub-9-cycle-2",
         "paymentMethod":{"type":"scheme","storedPaymentMethodId":"M5N7TQ4TG5PFWR50"},"shopperReference":"shopper-9",
         "shopperInteraction":"ContAuth","recurringProcessingModel":"Subscription","returnUrl":"https://payhook.invalid/adyen/return"}
        """#

    @Test("Adyen: a payment outside Adyen's rules is a 422 with status, errorCode, message and errorType", arguments: [
        (#""recurringProcessingModel":"Subscription""#, #""recurringProcessingModel":"Recurring""#),
        (#""shopperInteraction":"ContAuth""#, #""shopperInteraction":"Ecommerce""#),
        (#","shopperReference":"shopper-9""#, ""),
        (#""value":1010"#, #""value":10.10"#),
        (#""currency":"EUR""#, #""currency":"euro""#),
        // Checkout's PaymentRequest requires returnUrl, ContAuth or not (CheckoutService-v72).
        (#","returnUrl":"https://payhook.invalid/adyen/return""#, ""),
        (#""returnUrl":"https://payhook.invalid/adyen/return""#, #""returnUrl":"""#),
    ])
    func adyenRefused(from: String, to: String) async throws {
        try await withEmulator { emulator async throws in
            let headers = [("X-API-Key", emulator.configuration.adyenAPIKey)]
            #expect(try await emulator.send("POST", "/adyen/v72/payments", headers: headers, body: Self.adyenPayment).status == 200)
            let body = Self.adyenPayment.replacingOccurrences(of: from, with: to)
            #expect(body != Self.adyenPayment)
            let response = try await emulator.send("POST", "/adyen/v72/payments", headers: headers, body: body)
            #expect(response.status == 422)
            let error = try Self.json(response.body)
            #expect(error["status"] as? Int == 422)
            #expect(error["errorType"] as? String == "validation")
            #expect(error["errorCode"] is String)
            #expect((error["message"] as? String)?.isEmpty == false)
            #expect(emulator.adyen.totalExecutedCharges == 1)
        }
    }
}
