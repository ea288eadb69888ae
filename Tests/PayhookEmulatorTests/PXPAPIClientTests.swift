import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

@Suite("PXP API client against the emulator")
struct PXPAPIClientTests {
    @Test("a transaction is fetched with a verified PXP-UST1 signature and decoded")
    func fetchTransaction() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let id = ProviderEmulator.Demo.pxpTransactionID
            let payment = try await emulator.pxpClient().fetchPayment(id: id)

            #expect(payment == (try PXPTransactionDecoder.decode(try #require(emulator.pxp.transaction(id: id)))))
            #expect(payment.providerPaymentID == id)
            #expect(payment.status == .captured)
            #expect(payment.amount == (try Money(minorUnits: 10010, currency: "EUR")))
            #expect(payment.merchantReference == "sub-77-cycle-3")

            let logged = try #require(emulator.requests.last)
            #expect(logged.status == 200)
            #expect(logged.path == "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU")
            #expect(logged.header("x-client-id") == emulator.configuration.pxpClientID)
            #expect(logged.header("authorization") == "<redacted>")
            #expect(UUID(uuidString: try #require(logged.header("x-request-id"))) != nil)
        }
    }

    @Test("every request carries a fresh request id")
    func freshRequestIDs() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let client = emulator.pxpClient()
            for _ in 0..<3 { _ = try await client.fetchPayment(id: ProviderEmulator.Demo.pxpTransactionID) }
            let ids = emulator.requests.compactMap { $0.header("x-request-id") }
            #expect(ids.count == 3)
            #expect(Set(ids).count == 3)
        }
    }

    @Test("a wrong token value fails the emulator's HMAC check: unauthorized")
    func wrongTokenValue() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let client = emulator.pxpClient(tokenValue: "not-the-token-value")
            let error = await providerError { try await client.fetchPayment(id: ProviderEmulator.Demo.pxpTransactionID) }
            #expect(error?.kind == .unauthorized)
            #expect(!String(describing: error).contains("not-the-token-value"))
            #expect(!String(reflecting: client).contains("not-the-token-value"))
        }
    }

    /// PXP documents no answer for a transaction it does not know; the emulator's 404 is read
    /// like any undocumented answer (retried, then dead-lettered), never as "no such transaction".
    @Test("a missing transaction is an invalid (retried) answer, not notFound; a 503 unavailable")
    func notFoundAndUnavailable() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let client = emulator.pxpClient()
            #expect(await providerError { try await client.fetchPayment(id: "00000000-0000-4000-8000-000000000000") }?.kind == .invalidResponse)
            emulator.pxp.fail(next: 1, with: .status(503), on: .transaction)
            #expect(await providerError { try await client.fetchPayment(id: ProviderEmulator.Demo.pxpTransactionID) }?.kind == .unavailable)
            #expect(try await client.fetchPayment(id: ProviderEmulator.Demo.pxpTransactionID).status == .captured)
        }
    }

    @Test("an answer later than the client's deadline is a timeout")
    func timeout() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            emulator.pxp.fail(next: 1, with: .timeout(after: longDelay), on: .transaction)
            let client = emulator.pxpClient(timeout: shortDeadline)
            let error = await providerError { try await client.fetchPayment(id: ProviderEmulator.Demo.pxpTransactionID) }
            #expect(error?.kind == .timeout)
        }
    }

    @Test("orders are unsupported")
    func noOrders() async throws {
        try await withEmulator { emulator async throws in
            #expect(await providerError { try await emulator.pxpClient().fetchOrder(id: "x") }?.kind == .unsupported)
        }
    }
}
