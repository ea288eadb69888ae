import Foundation
import PayhookCore
import PayhookEmulator
import Testing
@testable import PayhookProviders

/// `PUT /_emulator/seed/…`: another process (payhook send-test) makes the emulator serve a
/// resource, which payhook's own clients then fetch as from the provider.
@Suite("Emulator seeding over HTTP")
struct EmulatorSeedingTests {
    @Test("a seeded Mercado Pago order and PXP transaction are served to payhook's clients")
    func seededResourcesAreServed() async throws {
        try await withEmulator { emulator in
            let order = #"{"id":"ORD01SEEDED","status":"processed","status_detail":"accredited","currency":"BRL","total_amount":"19.99","external_reference":"ref-1","transactions":{"payments":[{"id":"PAY01SEEDED","amount":"19.99","status":"processed","status_detail":"accredited"}]}}"#
            let seededOrder = try await emulator.send("PUT", ProviderEmulator.seedPathPrefix + "mercadopago/orders/ORD01SEEDED", body: order)
            #expect(seededOrder.status == 201)
            #expect(String(decoding: seededOrder.body, as: UTF8.self) == #"{"seeded":"mercadopago/orders/ORD01SEEDED"}"#)
            let fetched = try await emulator.mercadoPagoClient().fetchOrder(id: "ORD01SEEDED")
            #expect(fetched.merchantReference == "ref-1")
            #expect(fetched.amount == (try Money(minorUnits: 1999, currency: "BRL")))

            let transaction = #"{"systemTransactionId":"tx-seeded","state":"Refused","merchant":"\#(emulator.pxp.merchant)","site":"\#(emulator.pxp.site)","merchantTransactionId":"ref-2","amounts":{"transactionValue":5.00,"currencyCode":"EUR"},"transactionMethod":{"intent":"Authorisation","fundingType":"Card","entryType":"Ecom"}}"#
            let seededTransaction = try await emulator.send("PUT", ProviderEmulator.seedPathPrefix + "pxp/transactions/tx-seeded", body: transaction)
            #expect(seededTransaction.status == 201)
            let payment = try await emulator.pxpClient().fetchPayment(id: "tx-seeded")
            #expect(payment.merchantReference == "ref-2")
            #expect(payment.transition == .advance(.declined))
        }
    }

    @Test("a body that is not a JSON object, another collection or another method is refused and seeds nothing")
    func refusals() async throws {
        try await withEmulator { emulator in
            let prefix = ProviderEmulator.seedPathPrefix
            let notAnObject = try await emulator.send("PUT", prefix + "mercadopago/payments/123", body: "[1]")
            let otherProvider = try await emulator.send("PUT", prefix + "adyen/payments/123", body: "{}")
            let noID = try await emulator.send("PUT", prefix + "mercadopago/payments", body: "{}")
            let post = try await emulator.send("POST", prefix + "mercadopago/payments/123", body: "{}")
            let statuses: [Int] = [notAnObject.status, otherProvider.status, noID.status, post.status]
            #expect(statuses == [400, 404, 404, 405])
            #expect(emulator.mercadoPago.order(id: "123") == nil)
            let error = await providerError { try await emulator.mercadoPagoClient().fetchPayment(id: "123") }
            #expect(error?.kind == .notFound)
        }
    }
}
