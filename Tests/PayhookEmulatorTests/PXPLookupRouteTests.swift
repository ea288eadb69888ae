import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

@Suite("PXP lookups use PXP's documented routes")
struct PXPLookupRouteTests {
    @Test("fetchPayment and lookUpCharge call GET /transactions/{merchant}/{site} with the id as a query")
    func documentedRoutes() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let client = emulator.pxpClient()
            #expect(try await client.fetchPayment(id: ProviderEmulator.Demo.pxpTransactionID).status == .captured)
            let found = try #require(try await client.lookUpCharge(idempotencyKey: "sub-77-cycle-3", providerPaymentID: nil).result)
            #expect(found.providerPaymentID == ProviderEmulator.Demo.pxpTransactionID)
            let paths = emulator.requests.map(\.path)
            #expect(paths == ["/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU", "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU"])
            #expect(emulator.requests.map(\.status) == [200, 200])
            #expect(emulator.pxp.callCount(.transaction, id: ProviderEmulator.Demo.pxpTransactionID) == 1)
            #expect(emulator.pxp.callCount(.findTransactions, id: "sub-77-cycle-3") == 1)
        }
    }

    @Test("the routes payhook once guessed do not exist: 404 even when correctly signed", arguments: [
        "/pxp/api/v1/transactions/1ed768bb-e88a-4636-91ae-67927ccbb02b",
        "/pxp/api/v1/transactions?merchantTransactionId=sub-77-cycle-3",
    ])
    func guessedRoutes(target: String) async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let path = String(target.prefix { $0 != "?" })
            let signature = PXPRequestSigner.signature(
                tokenValue: emulator.configuration.pxpTokenValue, timestamp: "1747731062", requestID: "r-1",
                method: "GET", path: path, body: [])
            let authorization = PXPRequestSigner.authorization(
                tokenID: emulator.configuration.pxpTokenID, timestamp: "1747731062", signature: signature)
            let response = try await emulator.send("GET", target, headers: [
                ("Authorization", authorization), ("X-Request-Id", "r-1"), ("X-Client-Id", emulator.configuration.pxpClientID),
            ])
            #expect(response.status == 404)
        }
    }

    @Test("a 404 from the lookup is an unknown outcome that throws, never notFound")
    func notFoundIsUnknown() async throws {
        try await withEmulator { emulator async throws in
            emulator.pxp.fail(next: 1, with: .notFound, on: .findTransactions)
            let client = emulator.pxpClient()
            let error = await providerError { try await client.lookUpCharge(idempotencyKey: "never-used", providerPaymentID: nil) }
            #expect(error != nil)
            #expect(error?.kind != .notFound)
            // A well-formed empty answer is the only "never executed".
            #expect(try await client.lookUpCharge(idempotencyKey: "never-used", providerPaymentID: nil) == .notFound)
        }
    }

    @Test("a lookup naming another merchant or site is refused by the emulator")
    func otherSite() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let error = await providerError {
                try await emulator.pxpClient(site: "SITE-US").lookUpCharge(idempotencyKey: "sub-77-cycle-3", providerPaymentID: nil)
            }
            #expect(error?.kind == .unauthorized)
        }
    }
}
