import PayhookEmulator
import Testing
@testable import PayhookProviders

@Suite("Adyen API client")
struct AdyenAPIClientTests {
    @Test("fetching is unsupported and sends nothing: Adyen webhooks are self-contained")
    func unsupported() async throws {
        try await withEmulator { emulator async throws in
            let client = emulator.adyenClient()
            #expect(await providerError { try await client.fetchPayment(id: "V4HZ4RBFJGXXGN82") }?.kind == .unsupported)
            #expect(await providerError { try await client.fetchOrder(id: "order-1") }?.kind == .unsupported)
            #expect(emulator.requests.isEmpty)
            #expect(!String(reflecting: client).contains(emulator.configuration.adyenAPIKey))
        }
    }

    @Test("GET /storedPaymentMethods lists a shopper's tokens with their display data; the emulator refuses what Checkout refuses")
    func storedPaymentMethods() async throws {
        try await withEmulator { emulator async throws in
            // StoredPaymentMethodResource fields (Node library src/typings/checkout/storedPaymentMethodResource.ts); synthetic data.
            emulator.adyen.putStoredPaymentMethod(shopperReference: "shopper-1", json: """
                {"id":"M5N7TQ4TG5PFWR50","brand":"visa","expiryMonth":"03","expiryYear":"30","holderName":"J. Smith",
                 "lastFour":"1111","type":"scheme","supportedRecurringProcessingModels":["CardOnFile"]}
                """)
            let client = emulator.adyenClient()
            let methods = try await client.storedPaymentMethods(shopperReference: "shopper-1")
            #expect(methods.count == 1)
            let method = try #require(methods.first)
            #expect(method.token.token == "M5N7TQ4TG5PFWR50" && method.token.shopperReference == "shopper-1")
            #expect(method.token.brand == "visa" && method.token.last4 == "1111" && method.token.expiry == "03/2030")
            #expect(method.token.account == emulator.configuration.adyenMerchantAccount)
            #expect(method.recurringProcessingModels == ["CardOnFile"] && !method.supportsSubscriptions)
            #expect(!String(reflecting: method).contains("Smith"), "the holder's name is not kept")
            #expect(try await client.storedPaymentMethods(shopperReference: "nobody").isEmpty)
            #expect(emulator.adyen.callCount(.storedPaymentMethods, id: "shopper-1") == 1)

            let key = [("X-API-Key", emulator.configuration.adyenAPIKey)]
            let missing = try await emulator.send("GET", "/adyen/v72/storedPaymentMethods?shopperReference=shopper-1", headers: key)
            #expect(missing.status == 422)
            let otherAccount = try await emulator.send(
                "GET", "/adyen/v72/storedPaymentMethods?shopperReference=shopper-1&merchantAccount=Someone", headers: key)
            #expect(otherAccount.status == 403)
            let otherMerchant = await providerError { try await emulator.adyenClient(merchantAccount: "Someone").storedPaymentMethods(shopperReference: "shopper-1") }
            #expect(otherMerchant?.kind == .unauthorized)
        }
    }
}
