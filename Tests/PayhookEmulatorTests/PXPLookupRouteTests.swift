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

    /// A GET signed as payhook's client signs it.
    static func signedGET(_ emulator: ProviderEmulator, _ target: String) async throws -> HTTPClientResponse {
        let path = String(target.prefix { $0 != "?" })
        let signature = PXPRequestSigner.signature(
            tokenValue: emulator.configuration.pxpTokenValue, timestamp: "1747731062", requestID: "r-1",
            method: "GET", path: path, body: [])
        let authorization = PXPRequestSigner.authorization(
            tokenID: emulator.configuration.pxpTokenID, timestamp: "1747731062", signature: signature)
        return try await emulator.send("GET", target, headers: [
            ("Authorization", authorization), ("X-Request-Id", "r-1"), ("X-Client-Id", emulator.configuration.pxpClientID),
        ])
    }

    /// https://developer.pxp.io/guides/transactions/get-transaction-details: "a 200 response
    /// containing the transaction details", one transaction object, by either id. Seed 003's
    /// backend code also reads `GET /transactions/{systemTransactionId}`, which answers the same.
    @Test("the lookup answers one transaction object, by either id, and by the path form seed 003 uses", arguments: [
        "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU?systemTransactionId=1ed768bb-e88a-4636-91ae-67927ccbb02b",
        "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU?merchantTransactionId=sub-77-cycle-3",
        "/pxp/api/v1/transactions/1ed768bb-e88a-4636-91ae-67927ccbb02b",
    ])
    func singleObject(target: String) async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let response = try await Self.signedGET(emulator, target)
            #expect(response.status == 200)
            let answer = try #require(JSONValue.parse(response.body))
            #expect(answer["systemTransactionId"] == .string(ProviderEmulator.Demo.pxpTransactionID))
            #expect(answer["state"] == .string("Captured"))
        }
    }

    /// PXP documents no answer for a lookup that matches nothing (UNCONFIRMED); the emulator
    /// answers a single-resource GET's usual 404 with PXP's error body, never an invented list.
    @Test("a lookup that matches nothing is a 404", arguments: [
        "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU?systemTransactionId=0000",
        "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU?merchantTransactionId=never-used",
        "/pxp/api/v1/transactions/0000",
    ])
    func noMatch(target: String) async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let response = try await Self.signedGET(emulator, target)
            #expect(response.status == 404)
            #expect(JSONValue.parse(response.body)?["status"] == .number("404"))
        }
    }

    @Test("the query form without merchant and site does not exist: 404 even when correctly signed")
    func guessedRoute() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let response = try await Self.signedGET(emulator, "/pxp/api/v1/transactions?merchantTransactionId=sub-77-cycle-3")
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
            // Unarmed, the emulator's answer for a key never used is a 404 too: PXP documents no
            // "none" answer, so payhook never reads one as "never executed".
            let unarmed = await providerError { try await client.lookUpCharge(idempotencyKey: "never-used", providerPaymentID: nil) }
            #expect(unarmed != nil)
            #expect(unarmed?.kind != .notFound)
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
