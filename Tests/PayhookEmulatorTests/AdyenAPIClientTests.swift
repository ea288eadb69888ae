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
}
