import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

@Suite("Mercado Pago API client against the emulator")
struct MercadoPagoAPIClientTests {
    @Test("an order is fetched with the Bearer token and decoded to the expected snapshot")
    func fetchOrder() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let id = ProviderEmulator.Demo.mercadoPagoOrderID
            let order = try await emulator.mercadoPagoClient().fetchOrder(id: id)

            #expect(order == (try MercadoPagoOrderDecoder.decode(try #require(emulator.mercadoPago.order(id: id)))))
            #expect(order.providerOrderID == id)
            #expect(order.merchantReference == "sub-42-cycle-7")
            #expect(order.status == .captured)
            #expect(order.amount == (try Money(minorUnits: 10010, currency: "BRL")))
            #expect(order.payments.map(\.providerPaymentID) == ["PAY01JQ4S4KY8HWQ6NA5PXB65B3D4"])

            let logged = try #require(emulator.requests.last)
            #expect(logged.method == "GET")
            #expect(logged.path == "/mercadopago/v1/orders/\(id)")
            #expect(logged.header("authorization") == "<redacted>")
            #expect(emulator.mercadoPago.callCount(.order, id: id) == 1)
        }
    }

    @Test("a classic payment is fetched and decoded")
    func fetchPayment() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let payment = try await emulator.mercadoPagoClient().fetchPayment(id: ProviderEmulator.Demo.mercadoPagoPaymentID)
            #expect(payment.providerPaymentID == ProviderEmulator.Demo.mercadoPagoPaymentID)
            #expect(payment.status == .captured)
            #expect(payment.amount == (try Money(minorUnits: 400050, currency: "ARS")))
        }
    }

    @Test("an id with reserved characters is escaped into one path segment")
    func escapedID() async throws {
        try await withEmulator { emulator async throws in
            let id = "ORD 1/ñ?x"
            emulator.mercadoPago.putOrder(id: id, json: #"{"id":"ORD 1/ñ?x","status":"created","currency":"BRL"}"#)
            let order = try await emulator.mercadoPagoClient().fetchOrder(id: id)
            #expect(order.providerOrderID == id)
            #expect(emulator.requests.last?.path == "/mercadopago/v1/orders/ORD 1/ñ?x")
        }
    }

    @Test("a missing order is notFound")
    func notFound() async throws {
        try await withEmulator { emulator async throws in
            let error = await providerError { try await emulator.mercadoPagoClient().fetchOrder(id: "ORD-MISSING") }
            #expect(error?.kind == .notFound)
        }
    }

    @Test("a wrong access token is unauthorized, and no message shows either token")
    func wrongToken() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let wrong = "APP_USR-wrong-token-4711"
            let client = emulator.mercadoPagoClient(token: wrong)
            let error = await providerError { try await client.fetchOrder(id: ProviderEmulator.Demo.mercadoPagoOrderID) }
            #expect(error?.kind == .unauthorized)
            for text in [String(describing: error), String(reflecting: client), String(describing: client)] {
                #expect(!text.contains(wrong))
                #expect(!text.contains(emulator.configuration.mercadoPagoAccessToken))
            }
            #expect(emulator.requests.allSatisfy { !$0.headers.contains { $0.value.contains(wrong) } })
        }
    }

    @Test("provider statuses map to error kinds", arguments: [
        (503, ProviderAPIError.Kind.unavailable), (500, .unavailable), (429, .unavailable),
        (403, .unauthorized), (404, .notFound), (400, .invalidResponse),
    ])
    func statuses(status: Int, expected: ProviderAPIError.Kind) async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            emulator.mercadoPago.fail(next: 1, with: .status(status), on: .payment)
            let error = await providerError {
                try await emulator.mercadoPagoClient().fetchPayment(id: ProviderEmulator.Demo.mercadoPagoPaymentID)
            }
            #expect(error?.kind == expected)
            #expect(error.map { !$0.message.contains("{") } == true, "no response body in the message")
        }
    }

    @Test("an answer later than the client's deadline is a timeout")
    func timeout() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            emulator.mercadoPago.fail(next: 1, with: .timeout(after: longDelay), on: .order)
            let client = emulator.mercadoPagoClient(timeout: shortDeadline)
            let error = await providerError { try await client.fetchOrder(id: ProviderEmulator.Demo.mercadoPagoOrderID) }
            #expect(error?.kind == .timeout)
        }
    }

    @Test("a body the decoder rejects is invalidResponse")
    func undecodable() async throws {
        try await withEmulator { emulator async throws in
            emulator.mercadoPago.putOrder(id: "ORD-BAD", json: #"{"status":"processed"}"#)
            let error = await providerError { try await emulator.mercadoPagoClient().fetchOrder(id: "ORD-BAD") }
            #expect(error?.kind == .invalidResponse)
        }
    }

    @Test("nothing listening is unavailable")
    func connectionRefused() async throws {
        let emulator = try ProviderEmulator()
        try emulator.start()
        let client = emulator.mercadoPagoClient()
        emulator.stop()
        let error = await providerError { try await client.fetchOrder(id: "ORD1") }
        #expect(error?.kind == .unavailable)
    }
}
