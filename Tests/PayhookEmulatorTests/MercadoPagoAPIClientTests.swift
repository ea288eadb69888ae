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

    @Test("orders are served in the documented shape, country_code and no currency; the client decodes them in the site's or the account's currency")
    func documentedShape() async throws {
        try await withEmulator({ $0.mercadoPagoCurrency = "CLP"; $0.mercadoPagoCountryCode = "CHL" }) { emulator async throws in
            emulator.seedDemoResources()
            let demo = String(decoding: try #require(emulator.mercadoPago.order(id: ProviderEmulator.Demo.mercadoPagoOrderID)), as: UTF8.self)
            #expect(!demo.contains(#""currency""#))
            let charge = """
                {"type":"online","processing_mode":"automatic_async","external_reference":"sub-1-cycle-1","total_amount":"15000",
                 "payer":{"customer_id":"1284659970-cUsTmRk2"},
                 "transactions":{"payments":[{"amount":"15000","automatic_payments":{"payment_profile_id":"PP01ABC"},
                   "stored_credential":{"payment_initiator":"merchant","reason":"recurring","first_payment":false}}]}}
                """
            let answer = try await emulator.send("POST", "/mercadopago/v1/orders", headers: [
                ("Authorization", "Bearer \(emulator.configuration.mercadoPagoAccessToken)"),
                ("X-Idempotency-Key", "k-documented"), ("Content-Type", "application/json"),
            ], body: charge)
            #expect(answer.status == 201)
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(!text.contains(#""currency""#))
            #expect(text.contains(#""country_code":"CHL""#))
            let orderID = try MercadoPagoOrderDecoder.decode(answer.body).providerOrderID
            let fetched = try await emulator.mercadoPagoClient().fetchOrder(id: orderID)
            #expect(fetched.amount == (try Money(minorUnits: 15000, currency: "CLP")), "CLP has no minor unit: 15000 pesos")

            let http = makeTransport()
            let configured = MercadoPagoAPIClient(
                baseURL: emulator.baseURL(for: .mercadopago), accessToken: emulator.configuration.mercadoPagoAccessToken,
                http: http, currencies: MercadoPagoCurrencyOverrides(byAccount: ["ACME_US": "USD"]))
            #expect(try await configured.fetchOrder(id: orderID, account: "acme-us").amount == (try Money(minorUnits: 1_500_000, currency: "USD")))
            #expect(try await configured.fetchOrder(id: orderID, account: "other").amount?.currency == "CLP")
        }
    }

    @Test("a failed order is answered 402 with the order, and the client reads it as a decline, not an error")
    func failedOrderIs402() async throws {
        try await withEmulator { emulator async throws in
            emulator.mercadoPago.scriptCharges([.declined(code: "rejected_by_issuer")])
            let credential = StoredCredential(token: "PP01JQ4S4KY8", customerID: "1284659970-cUsTmRk2")
            let amount = try Money(minorUnits: 10010, currency: "BRL")
            let result = try await emulator.mercadoPagoClient().charge(
                storedCredential: credential, amount: amount, reference: "sub-1-c1", idempotencyKey: "k-402")
            #expect(result.outcome == .declinedSoft)
            #expect(result.declineCode == "rejected_by_issuer")
            #expect(emulator.requests.last?.status == 402)
        }
    }

    @Test("a reused idempotency key with another body is answered 409 and surfaces as an error, never as a decline or a success")
    func reusedKeyIs409() async throws {
        try await withEmulator { emulator async throws in
            let credential = StoredCredential(token: "PP01JQ4S4KY8", customerID: "1284659970-cUsTmRk2")
            let client = emulator.mercadoPagoClient()
            _ = try await client.charge(storedCredential: credential, amount: try Money(minorUnits: 10010, currency: "BRL"),
                                        reference: "sub-1-c1", idempotencyKey: "k-409")
            let error = await #expect(throws: ProviderAPIError.self) {
                _ = try await client.charge(storedCredential: credential, amount: try Money(minorUnits: 20010, currency: "BRL"),
                                            reference: "sub-1-c1", idempotencyKey: "k-409")
            }
            // The charge handler records every .invalidResponse as an unknown outcome, retried
            // with the same key or reconciled (ChargeRecurringHandler.recordFailure).
            #expect(error?.kind == .invalidResponse)
            #expect(emulator.mercadoPago.executedCharges(idempotencyKey: "k-409") == 1)
        }
    }

    @Test("a charge whose answer was lost is found by its external_reference through the order search")
    func lostAnswerFoundBySearch() async throws {
        try await withEmulator { emulator async throws in
            let credential = StoredCredential(token: "PP01JQ4S4KY8", customerID: "1284659970-cUsTmRk2")
            let client = emulator.mercadoPagoClient()
            let sentAt = Date()
            let created = try await client.charge(storedCredential: credential, amount: try Money(minorUnits: 10010, currency: "BRL"),
                                                  reference: "sub-7-c3", idempotencyKey: "k-lost")
            let found = try await client.lookUpCharge(idempotencyKey: "k-lost", providerPaymentID: nil, reference: "sub-7-c3", sentAt: sentAt)
            #expect(found == .found(created))
            #expect(emulator.mercadoPago.callCount(.searchOrders, id: "sub-7-c3") == 1)

            #expect(try await client.lookUpCharge(idempotencyKey: "k-x", providerPaymentID: nil, reference: "sub-7-c4", sentAt: sentAt) == .notFound)
            // An earlier attempt's order of the same cycle, long before this attempt, is not this one.
            #expect(try await client.lookUpCharge(idempotencyKey: "k-lost", providerPaymentID: nil, reference: "sub-7-c3",
                                                  sentAt: sentAt.addingTimeInterval(3 * 86_400)) == .notFound)

            _ = try await client.charge(storedCredential: credential, amount: try Money(minorUnits: 10010, currency: "BRL"),
                                        reference: "sub-7-c3", idempotencyKey: "k-lost-2")
            let ambiguous = await #expect(throws: ProviderAPIError.self) {
                _ = try await client.lookUpCharge(idempotencyKey: "k-lost", providerPaymentID: nil, reference: "sub-7-c3", sentAt: sentAt)
            }
            #expect(ambiguous?.kind == .invalidResponse)
        }
    }

    @Test("a saved card is confirmed through GET /v1/customers/{id}/cards/{id} as a card id; an unknown one is not found")
    func customerCard() async throws {
        try await withEmulator { emulator async throws in
            // CustomerCardResponse fields (Node SDK src/clients/customerCard); synthetic card data.
            emulator.mercadoPago.putCustomerCard(customerID: "1284659970-cUsTmRk2", cardID: "9120384756", json: """
                {"id":"9120384756","customer_id":"1284659970-cUsTmRk2","expiration_month":11,"expiration_year":2030,
                 "first_six_digits":"940000","last_four_digits":"0007",
                 "payment_method":{"id":"master","name":"Mastercard","payment_type_id":"credit_card"},
                 "security_code":{"length":3,"card_location":"back"},"issuer":{"id":"3","name":"Mastercard"},
                 "cardholder":{"name":"APRO","identification":{"type":"DNI","number":"12345678"}},
                 "date_created":"2025-03-01T10:00:00.000-04:00","date_last_updated":"2025-03-01T10:00:00.000-04:00",
                 "user_id":"1873904477","live_mode":false}
                """)
            let client = emulator.mercadoPagoClient()
            let card = try await client.fetchCustomerCard(customerID: "1284659970-cUsTmRk2", cardID: "9120384756")
            #expect(card.token == "9120384756")
            #expect(card.kind == .cardID)
            #expect(card.customerID == "1284659970-cUsTmRk2")
            #expect(card.brand == "master")
            #expect(card.last4 == "0007")
            #expect(card.expiry == "11/2030")
            #expect(!String(reflecting: card).contains("940000"), "the BIN is not kept")
            let unknown = await #expect(throws: ProviderAPIError.self) {
                _ = try await client.fetchCustomerCard(customerID: "1284659970-cUsTmRk2", cardID: "1111")
            }
            #expect(unknown?.kind == .notFound)
            #expect(emulator.mercadoPago.callCount(.customerCard, id: "1284659970-cUsTmRk2/9120384756") == 1)
        }
    }

    @Test("a payment profile is read through GET /v1/customers/{id}/payment-profiles/{id}; another customer's is a 400, an unknown one not found")
    func paymentProfile() async throws {
        try await withEmulator { emulator async throws in
            // The answer example of Mercado Pago's profile management guide (see docs/providers.md); synthetic ids.
            emulator.mercadoPago.putPaymentProfile(customerID: "1284659970-cUsTmRk2", profileID: "7036b192b541454fa9b9990660dfa1b5", json: """
                {"id":"7036b192b541454fa9b9990660dfa1b5","created_date":"2024-05-22T14:03:28.653Z",
                 "last_updated_date":"2024-05-22T14:03:28.653Z","description":"Payment description","max_day_overdue":5,
                 "statement_descriptor":"Test Descriptor","status":"READY","sequence_control":"AUTO",
                 "payment_methods":[{"payment_method_id":"64abf0f5-3e15-48a5-9be0-a8ac56bbd87a","id":"visa",
                                     "type":"credit_card","card_id":1234567890,"status":"READY","default_method":true}]}
                """)
            let client = emulator.mercadoPagoClient()
            let profile = try await client.fetchPaymentProfile(customerID: "1284659970-cUsTmRk2", profileID: "7036b192b541454fa9b9990660dfa1b5")
            #expect(profile.status == "READY" && profile.isChargeable)
            #expect(profile.token.token == "7036b192b541454fa9b9990660dfa1b5" && profile.token.kind == .paymentProfile)
            #expect(profile.token.customerID == "1284659970-cUsTmRk2" && profile.token.brand == "visa")
            let mismatch = await providerError {
                try await client.fetchPaymentProfile(customerID: "another-customer", profileID: "7036b192b541454fa9b9990660dfa1b5")
            }
            #expect(mismatch?.kind == .invalidResponse)
            let unknown = await providerError { try await client.fetchPaymentProfile(customerID: "1284659970-cUsTmRk2", profileID: "pp-none") }
            #expect(unknown?.kind == .notFound)
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

@Suite("Mercado Pago charge lookups")
struct MercadoPagoChargeLookupTests {
    @Test("a pending charge is looked up with GET /v1/orders/{order id}, classified like the create answer")
    func lookUpPendingOrder() async throws {
        try await withChargeHarness(.mercadopago) { harness async throws in
            harness.script([.pending])
            let pending = try await harness.charge(key: "charge-pending")
            #expect(pending.outcome == .pending)
            let orderID = try #require(pending.providerPaymentID)
            harness.emulator.clearRequestLog()

            let client = harness.emulator.mercadoPagoClient()
            #expect(try await client.lookUpCharge(idempotencyKey: "charge-pending", providerPaymentID: orderID) == .found(pending))
            #expect(harness.emulator.requests.map(\.path) == ["/mercadopago/v1/orders/\(orderID)"])
            #expect(harness.emulator.requests.map(\.status) == [200])

            // Mercado Pago settles it: the lookup now reports the processed order.
            let settled = try #require(harness.emulator.mercadoPago.order(id: orderID)).replacingStatus("processing", with: "processed")
            harness.emulator.mercadoPago.putOrder(id: orderID, json: settled)
            let found = try #require(try await client.lookUpCharge(idempotencyKey: "charge-pending", providerPaymentID: orderID).result)
            #expect(found.outcome == .succeeded)
            #expect(found.providerPaymentID == orderID)
            #expect(harness.totalExecuted == 1)
        }
    }

    @Test("a missing order throws instead of reading as never charged")
    func missingOrder() async throws {
        try await withEmulator { emulator async throws in
            let error = await providerError {
                try await emulator.mercadoPagoClient().lookUpCharge(idempotencyKey: "k", providerPaymentID: "ORD-MISSING")
            }
            #expect(error?.kind == .notFound)
        }
    }
}

extension [UInt8] {
    /// The JSON text with every `"status":"<from>"` made `"status":"<to>"`.
    fileprivate func replacingStatus(_ from: String, with to: String) -> [UInt8] {
        Array(String(decoding: self, as: UTF8.self)
            .replacingOccurrences(of: #""status":"\#(from)""#, with: #""status":"\#(to)""#).utf8)
    }
}
