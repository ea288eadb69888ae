import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

@Suite("Emulator request validation and faults")
struct EmulatorValidationTests {
    @Test("Mercado Pago requires the configured Bearer token")
    func mercadoPagoAuth() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let path = "/mercadopago/v1/orders/\(ProviderEmulator.Demo.mercadoPagoOrderID)"
            let token = emulator.configuration.mercadoPagoAccessToken
            #expect(try await emulator.send("GET", path).status == 401)
            #expect(try await emulator.send("GET", path, headers: [("Authorization", "Bearer nope")]).status == 401)
            #expect(try await emulator.send("GET", path, headers: [("Authorization", token)]).status == 401)
            #expect(try await emulator.send("GET", path, headers: [("Authorization", "Bearer \(token)")]).status == 200)
            #expect(emulator.requests.allSatisfy { $0.header("authorization").map { $0 == "<redacted>" } ?? true })
        }
    }

    @Test("Adyen requires the configured API key and merchant account")
    func adyenAuth() async throws {
        try await withEmulator { emulator async throws in
            let body = #"{"merchantAccount":"Other","amount":{"currency":"EUR","value":100},"reference":"r","paymentMethod":{"type":"scheme"}}"#
            #expect(try await emulator.send("POST", "/adyen/v72/payments", body: body).status == 401)
            #expect(try await emulator.send("POST", "/adyen/v72/payments", headers: [("X-API-Key", "wrong")], body: body).status == 401)
            let key = emulator.configuration.adyenAPIKey
            #expect(try await emulator.send("POST", "/adyen/v72/payments", headers: [("X-API-Key", key)], body: body).status == 403)
            #expect(emulator.requests.allSatisfy { $0.header("x-api-key").map { $0 == "<redacted>" } ?? true })
        }
    }

    @Test("PXP rejects malformed or wrongly signed Authorization headers", arguments: [
        "Bearer abc",
        "PXP-UST1 payhook-emulator-token",
        "PXP-UST1 payhook-emulator-token:1747731062",
        "PXP-UST1 other-token:1747731062:R4qIVooM7kpqkoNTr9dyMZcNmIwi9taEaAubosGE4cA=",
        "PXP-UST1 payhook-emulator-token:yesterday:R4qIVooM7kpqkoNTr9dyMZcNmIwi9taEaAubosGE4cA=",
        "PXP-UST1 payhook-emulator-token:1747731062:not-base64!",
        "PXP-UST1 payhook-emulator-token:1747731062:R4qIVooM7kpqkoNTr9dyMZcNmIwi9taEaAubosGE4cA=",
    ])
    func pxpMalformed(authorization: String) async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let response = try await emulator.send(
                "GET", "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU?systemTransactionId=\(ProviderEmulator.Demo.pxpTransactionID)",
                headers: [("Authorization", authorization), ("X-Request-Id", "r-1"), ("X-Client-Id", emulator.configuration.pxpClientID)])
            #expect(response.status == 401)
        }
    }

    @Test("PXP accepts a request signed as PXPRequestSigner signs it, and requires the client and request ids")
    func pxpSigned() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let path = "/pxp/api/v1/transactions/PAYHOOK-1/SITE-EU"
            let query = "?systemTransactionId=\(ProviderEmulator.Demo.pxpTransactionID)"
            let signature = PXPRequestSigner.signature(
                tokenValue: emulator.configuration.pxpTokenValue, timestamp: "1747731062", requestID: "r-1",
                method: "GET", path: path, body: [])
            let authorization = PXPRequestSigner.authorization(
                tokenID: emulator.configuration.pxpTokenID, timestamp: "1747731062", signature: signature)
            let clientID = ("X-Client-Id", emulator.configuration.pxpClientID)
            let requestID = ("X-Request-Id", "r-1")
            #expect(try await emulator.send("GET", path + query, headers: [("Authorization", authorization), requestID, clientID]).status == 200)
            #expect(try await emulator.send("GET", path + query, headers: [("Authorization", authorization), requestID]).status == 401)
            #expect(try await emulator.send("GET", path + query, headers: [("Authorization", authorization), clientID]).status == 401)
            // The request id is signed: another one with the same signature fails.
            #expect(try await emulator.send("GET", path + query, headers: [("Authorization", authorization), ("X-Request-Id", "r-2"), clientID]).status == 401)
        }
    }

    @Test("a fault is consumed by exactly the requests it was armed for")
    func faultConsumedOnce() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let client = emulator.mercadoPagoClient()
            let id = ProviderEmulator.Demo.mercadoPagoOrderID
            emulator.mercadoPago.fail(next: 1, with: .status(503), on: .order, id: id)
            #expect(await providerError { try await client.fetchOrder(id: id) }?.kind == .unavailable)
            #expect(try await client.fetchOrder(id: id).providerOrderID == id)
            #expect(emulator.mercadoPago.callCount(.order, id: id) == 2)
            #expect(emulator.requests.map(\.status) == [503, 200])
        }
    }

    @Test("a fault for one resource leaves others alone and wins over an endpoint-wide fault")
    func faultScope() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            emulator.mercadoPago.putOrder(id: "ORD-OTHER", json: #"{"id":"ORD-OTHER","status":"created"}"#)
            let client = emulator.mercadoPagoClient()
            let id = ProviderEmulator.Demo.mercadoPagoOrderID
            emulator.mercadoPago.fail(next: 1, with: .notFound, on: .order, id: id)
            emulator.mercadoPago.fail(next: 1, with: .status(500), on: .order)
            #expect(await providerError { try await client.fetchOrder(id: id) }?.kind == .notFound)
            #expect(await providerError { try await client.fetchOrder(id: "ORD-OTHER") }?.kind == .unavailable)
            #expect(try await client.fetchOrder(id: id).providerOrderID == id)
            #expect(try await client.fetchOrder(id: "ORD-OTHER").providerOrderID == "ORD-OTHER")
        }
    }

    @Test("requests with wrong credentials do not consume faults")
    func unauthenticatedKeepsFault() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            emulator.mercadoPago.fail(next: 1, with: .status(503), on: .payment)
            let id = ProviderEmulator.Demo.mercadoPagoPaymentID
            #expect(await providerError { try await emulator.mercadoPagoClient(token: "wrong").fetchPayment(id: id) }?.kind == .unauthorized)
            #expect(await providerError { try await emulator.mercadoPagoClient().fetchPayment(id: id) }?.kind == .unavailable)
        }
    }

    @Test("unknown paths are 404 and logged without a provider")
    func unknownPath() async throws {
        try await withEmulator { emulator async throws in
            #expect(try await emulator.send("GET", "/stripe/v1/charges").status == 404)
            #expect(emulator.requests.first?.provider == nil)
        }
    }
}
