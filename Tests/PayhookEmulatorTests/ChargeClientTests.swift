import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

/// One provider's client under test, with the emulator hooks a charge test needs.
struct ChargeHarness {
    let provider: ProviderID
    let emulator: ProviderEmulator
    let credential: StoredCredential
    let amount: Money
    /// A scripted decline code of each kind, in the provider's vocabulary.
    let softCode: String
    let hardCode: String

    init(_ provider: ProviderID, _ emulator: ProviderEmulator) throws {
        self.provider = provider
        self.emulator = emulator
        switch provider {
        case .mercadopago:
            credential = StoredCredential(token: "PP01JQ4S4KY8", customerID: "1284659970-cUsTmRk2",
                                          previousTransactionReference: "PAY01JQ4S4KY8HWQ6NA5PXB65B3D4")
            amount = try Money(minorUnits: 10010, currency: "BRL")
            (softCode, hardCode) = ("insufficient_amount", "card_disabled")
        case .adyen:
            credential = StoredCredential(token: "M5N7TQ4TG5PFWR50", shopperReference: "shopper-9")
            amount = try Money(minorUnits: 1010, currency: "EUR")
            (softCode, hardCode) = ("12", "6")
        case .pxp:
            credential = StoredCredential(token: "7f46c09d-d1d1-4f94-9a88-6e8ac32e6341", shopperReference: "Shopper_01")
            amount = try Money(minorUnits: 100_10, currency: "EUR")
            (softCode, hardCode) = ("CRD105", "CRD999")
        }
    }

    func client(timeout: Duration = .seconds(5)) -> any PaymentProviderClient {
        switch provider {
        case .mercadopago: emulator.mercadoPagoClient(timeout: timeout)
        case .adyen: emulator.adyenClient(timeout: timeout)
        case .pxp: emulator.pxpClient(timeout: timeout)
        }
    }

    func charge(key: String, reference: String = "sub-1-cycle-1", credential: StoredCredential? = nil,
                amount: Money? = nil, timeout: Duration = .seconds(5)) async throws(ProviderAPIError) -> ChargeResult {
        try await client(timeout: timeout).charge(
            storedCredential: credential ?? self.credential, amount: amount ?? self.amount, reference: reference,
            idempotencyKey: key)
    }

    func script(_ results: [EmulatedChargeResult]) {
        switch provider {
        case .mercadopago: emulator.mercadoPago.scriptCharges(results)
        case .adyen: emulator.adyen.scriptCharges(results)
        case .pxp: emulator.pxp.scriptCharges(results)
        }
    }

    /// Arms a fault on the charge endpoint for this key.
    func fail(with fault: EmulatorFault, key: String) {
        switch provider {
        case .mercadopago: emulator.mercadoPago.fail(next: 1, with: fault, on: .createOrder, id: key)
        case .adyen: emulator.adyen.fail(next: 1, with: fault, on: .payments, id: key)
        case .pxp: emulator.pxp.fail(next: 1, with: fault, on: .createTransaction, id: key)
        }
    }

    func executed(_ key: String) -> Int {
        switch provider {
        case .mercadopago: emulator.mercadoPago.executedCharges(idempotencyKey: key)
        case .adyen: emulator.adyen.executedCharges(idempotencyKey: key)
        case .pxp: emulator.pxp.executedCharges(idempotencyKey: key)
        }
    }

    func replayed(_ key: String) -> Int {
        switch provider {
        case .mercadopago: emulator.mercadoPago.replayedCharges(idempotencyKey: key)
        case .adyen: emulator.adyen.replayedCharges(idempotencyKey: key)
        case .pxp: emulator.pxp.replayedCharges(idempotencyKey: key)
        }
    }

    var ledger: [ExecutedCharge] {
        switch provider {
        case .mercadopago: emulator.mercadoPago.allExecutedCharges
        case .adyen: emulator.adyen.allExecutedCharges
        case .pxp: emulator.pxp.allExecutedCharges
        }
    }

    var totalExecuted: Int {
        switch provider {
        case .mercadopago: emulator.mercadoPago.totalExecutedCharges
        case .adyen: emulator.adyen.totalExecutedCharges
        case .pxp: emulator.pxp.totalExecutedCharges
        }
    }

    /// The provider's word for an approved charge.
    var approvedStatus: String {
        switch provider {
        case .mercadopago: "processed"
        case .adyen: "Authorised"
        case .pxp: "Captured"
        }
    }
}

/// Runs `body` with a fresh emulator and the harness of `provider`.
func withChargeHarness(
    _ provider: ProviderID, _ adjust: (inout ProviderEmulator.Configuration) -> Void = { _ in },
    _ body: (ChargeHarness) async throws -> Void
) async throws {
    try await withEmulator(adjust) { emulator async throws in
        try await body(try ChargeHarness(provider, emulator))
    }
}

@Suite("Charging stored credentials through the real clients and the emulator")
struct ChargeClientTests {
    @Test("an approved charge succeeds with the provider's id, as the emulator recorded it", arguments: ProviderID.allCases)
    func approved(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            let result = try await harness.charge(key: "charge-42-7-1", reference: "sub-42-cycle-7")
            #expect(result.outcome == .succeeded)
            #expect(result.providerStatus == harness.approvedStatus)
            #expect(result.declineCode == nil)
            let recorded = try #require(harness.ledger.first)
            #expect(harness.ledger.count == 1)
            #expect(result.providerPaymentID == recorded.providerPaymentID)
            #expect(recorded.idempotencyKey == "charge-42-7-1")
            #expect(recorded.reference == (provider == .pxp ? nil : "sub-42-cycle-7"))
            #expect(recorded.currency == harness.amount.currency)
        }
    }

    @Test("soft and hard declines and pending charges are classified, with the provider's code", arguments: ProviderID.allCases)
    func declinesAndPending(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            harness.script([.declined(code: harness.softCode), .declined(code: harness.hardCode), .pending, .error])
            let soft = try await harness.charge(key: "k-soft")
            let hard = try await harness.charge(key: "k-hard")
            let pending = try await harness.charge(key: "k-pending")
            let error = try await harness.charge(key: "k-error")
            #expect(soft.outcome == .declinedSoft)
            #expect(soft.declineCode == harness.softCode)
            #expect(hard.outcome == .declinedHard)
            #expect(hard.declineCode == harness.hardCode)
            #expect(pending.outcome == .pending)
            #expect(pending.declineCode == nil)
            // A technical error without a decline code is soft for every provider.
            #expect(error.outcome == .declinedSoft)
            #expect([soft, hard, pending, error].allSatisfy { $0.providerPaymentID != nil })
            #expect(harness.totalExecuted == 4)
        }
    }

    @Test("the same idempotency key twice executes once and returns the same result", arguments: ProviderID.allCases)
    func sameKeyTwice(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            harness.script([.declined(code: harness.softCode)])
            let first = try await harness.charge(key: "charge-replay")
            let second = try await harness.charge(key: "charge-replay")
            #expect(first == second)
            #expect(first.outcome == .declinedSoft)
            #expect(harness.executed("charge-replay") == 1)
            #expect(harness.replayed("charge-replay") == 1)
            #expect(harness.totalExecuted == 1)
        }
    }

    @Test("a timeout after executing, then a retry with the same key: exactly one execution", arguments: ProviderID.allCases)
    func timeoutThenRetry(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            harness.fail(with: .timeout(after: longDelay), key: "charge-t")
            let error = await providerError { try await harness.charge(key: "charge-t", timeout: shortDeadline) }
            #expect(error?.kind == .timeout)
            #expect(error?.isRetryable == true)
            #expect(harness.executed("charge-t") == 1)

            let retry = try await harness.charge(key: "charge-t")
            #expect(retry.outcome == .succeeded)
            #expect(retry.providerPaymentID == harness.ledger.first?.providerPaymentID)
            #expect(harness.executed("charge-t") == 1)
            #expect(harness.totalExecuted == 1)
        }
    }

    @Test("a 503 executes nothing; the retry with the same key executes once", arguments: ProviderID.allCases)
    func unavailableThenRetry(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            harness.fail(with: .status(503), key: "charge-503")
            let error = await providerError { try await harness.charge(key: "charge-503") }
            #expect(error?.kind == .unavailable)
            #expect(error?.isRetryable == true)
            #expect(harness.executed("charge-503") == 0)

            #expect(try await harness.charge(key: "charge-503").outcome == .succeeded)
            #expect(harness.executed("charge-503") == 1)
            #expect(harness.totalExecuted == 1)
        }
    }

    @Test("an idempotency key that is empty or over the provider's limit (64, PXP 50) is refused before sending", arguments: ProviderID.allCases)
    func invalidKey(provider: ProviderID) async throws {
        let limit = provider == .pxp ? 50 : 64
        try await withChargeHarness(provider) { harness async throws in
            for key in ["", String(repeating: "k", count: limit + 1), "has space"] {
                let error = await providerError { try await harness.charge(key: key) }
                #expect(error?.kind == .invalidResponse)
                #expect(error?.isRetryable == false)
            }
            #expect(try await harness.charge(key: String(repeating: "k", count: limit)).outcome == .succeeded)
            #expect(harness.emulator.requests.count == 1)
        }
    }

    @Test("the same key with a different amount is a 4xx the client reports as not retryable", arguments: ProviderID.allCases)
    func keyReusedWithAnotherBody(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            _ = try await harness.charge(key: "charge-reused")
            let other = try Money(minorUnits: harness.amount.minorUnits + 100, currency: harness.amount.currency)
            let error = await providerError { try await harness.charge(key: "charge-reused", amount: other) }
            #expect(error?.kind == .invalidResponse)
            #expect(error?.isRetryable == false)
            #expect(error.map { !$0.message.contains("{") } == true, "no response body in the message")
            #expect(harness.totalExecuted == 1)
        }
    }

    @Test("credential fields a provider requires are checked before sending")
    func requiredFields() async throws {
        try await withEmulator { emulator async throws in
            let amount = try Money(minorUnits: 100, currency: "EUR")
            let cases: [(any PaymentProviderClient, StoredCredential)] = [
                (emulator.mercadoPagoClient(), StoredCredential(token: "PP1")),
                (emulator.mercadoPagoClient(), StoredCredential(token: "", customerID: "c")),
                (emulator.adyenClient(), StoredCredential(token: "M5N7")),
                (emulator.pxpClient(), StoredCredential(token: "")),
            ]
            for (client, credential) in cases {
                let error = await providerError {
                    try await client.charge(storedCredential: credential, amount: amount, reference: "r", idempotencyKey: "k")
                }
                #expect(error?.kind == .invalidResponse)
            }
            let zero = try Money(minorUnits: 0, currency: "EUR")
            let error = await providerError {
                try await emulator.adyenClient().charge(storedCredential: StoredCredential(token: "M5N7", shopperReference: "s"),
                                                        amount: zero, reference: "r", idempotencyKey: "k")
            }
            #expect(error?.kind == .invalidResponse)
            #expect(emulator.requests.isEmpty)
        }
    }

    @Test("a merchant account or site the provider refuses is unauthorized, not retried")
    func refusedAccount() async throws {
        try await withEmulator { emulator async throws in
            let adyen = emulator.adyenClient(merchantAccount: "SomeoneElse")
            let adyenError = await providerError {
                try await adyen.charge(storedCredential: StoredCredential(token: "M5N7", shopperReference: "s"),
                                       amount: try Money(minorUnits: 100, currency: "EUR"), reference: "r", idempotencyKey: "k1")
            }
            #expect(adyenError?.kind == .unauthorized)
            let pxp = emulator.pxpClient(site: "SITE-XX")
            let pxpError = await providerError {
                try await pxp.charge(storedCredential: StoredCredential(token: "t"),
                                     amount: try Money(minorUnits: 100, currency: "EUR"), reference: "r", idempotencyKey: "k2")
            }
            #expect(pxpError?.kind == .unauthorized)
            #expect(emulator.totalExecutedCharges == 0)
        }
    }

    @Test("no message or description shows a credential")
    func noSecretsInErrors() async throws {
        try await withEmulator { emulator async throws in
            emulator.mercadoPago.fail(next: 1, with: .status(500), on: .createOrder)
            let client = emulator.mercadoPagoClient()
            let error = await providerError {
                try await client.charge(storedCredential: StoredCredential(token: "PP1", customerID: "c"),
                                        amount: try Money(minorUnits: 100, currency: "BRL"), reference: "r", idempotencyKey: "k")
            }
            #expect(error?.kind == .unavailable)
            for text in [String(describing: error), String(reflecting: client)] {
                #expect(!text.contains(emulator.configuration.mercadoPagoAccessToken))
            }
        }
    }

    @Test("Mercado Pago: the order request carries the stored-credential fields PROVIDERS.md lists")
    func mercadoPagoRequestShape() async throws {
        try await withChargeHarness(.mercadopago) { harness async throws in
            let result = try await harness.charge(key: "charge-shape", reference: "sub-42-cycle-7")
            let orderID = try #require(result.providerPaymentID)
            let order = try #require(harness.emulator.mercadoPago.order(id: orderID))
            let snapshot = try MercadoPagoOrderDecoder.decode(order)
            #expect(snapshot.amount == harness.amount)
            #expect(snapshot.merchantReference == "sub-42-cycle-7")
            let logged = try #require(harness.emulator.requests.last)
            #expect(logged.header("x-idempotency-key") == "charge-shape")
            #expect(logged.header("authorization") == "<redacted>")
            #expect(logged.path == "/mercadopago/v1/orders")
        }
    }

    @Test("Adyen: the payment request carries the key, and the amount in minor units")
    func adyenRequestShape() async throws {
        try await withChargeHarness(.adyen) { harness async throws in
            let result = try await harness.charge(key: "charge-shape", reference: "sub-9-cycle-2")
            let pspReference = try #require(result.providerPaymentID)
            let stored = try #require(harness.emulator.adyen.payment(pspReference: pspReference))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(stored)) as? [String: Any])
            #expect((json["amount"] as? [String: Any])?["value"] as? Int == 1010)
            #expect((json["additionalData"] as? [String: Any])?["recurringProcessingModel"] as? String == "Subscription")
            #expect(harness.ledger.first?.amount == "1010")
            let logged = try #require(harness.emulator.requests.last)
            #expect(logged.header("idempotency-key") == "charge-shape")
            #expect(logged.header("x-api-key") == "<redacted>")
            #expect(logged.path == "/adyen/v72/payments")
        }
    }

    @Test("PXP: lookUpCharge finds a charge whose answer was lost to a timeout, without charging again")
    func pxpFindAfterTimeout() async throws {
        try await withChargeHarness(.pxp) { harness async throws in
            harness.script([.declined(code: "CRD105")])
            harness.fail(with: .timeout(after: longDelay), key: "sub-77-cycle-5")
            let error = await providerError { try await harness.charge(key: "sub-77-cycle-5", timeout: shortDeadline) }
            #expect(error?.kind == .timeout)

            let found = try #require(try await harness.emulator.pxpClient().lookUpCharge(idempotencyKey: "sub-77-cycle-5", providerPaymentID: nil).result)
            #expect(found.outcome == .declinedSoft)
            #expect(found.declineCode == "CRD105")
            #expect(found.providerStatus == "Refused")
            #expect(found.providerPaymentID == harness.ledger.first?.providerPaymentID)
            #expect(harness.totalExecuted == 1)
            #expect(harness.emulator.pxp.callCount(.findTransactions, id: "sub-77-cycle-5") == 1)
        }
    }

    @Test("PXP: lookUpCharge of an unused key stays unknown (PXP documents no \"none\"), and an escaped key round-trips")
    func pxpFindMissing() async throws {
        try await withChargeHarness(.pxp) { harness async throws in
            let client = harness.emulator.pxpClient()
            let unused = await providerError { try await client.lookUpCharge(idempotencyKey: "never-used", providerPaymentID: nil) }
            #expect(unused != nil && unused?.kind != .notFound)
            let key = "sub/77?cycle=6&x"
            let charged = try await harness.charge(key: key)
            #expect(try await client.lookUpCharge(idempotencyKey: key, providerPaymentID: nil) == .found(charged))
            let prefix = await providerError { try await client.lookUpCharge(idempotencyKey: "sub", providerPaymentID: nil) }
            #expect(prefix != nil && prefix?.kind != .notFound)
        }
    }

    @Test("PXP: a resubmission is sent with its own processing model and still charges once per key")
    func pxpResubmission() async throws {
        try await withChargeHarness(.pxp) { harness async throws in
            harness.script([.declined(code: "51")])
            let first = try await harness.charge(key: "sub-8-cycle-1-a1")
            #expect(first.outcome == .declinedSoft)
            var retry = harness.credential
            retry.reason = .resubmission
            retry.previousTransactionReference = first.providerPaymentID
            let second = try await harness.charge(key: "sub-8-cycle-1-a2", credential: retry)
            #expect(second.outcome == .succeeded)
            #expect(harness.ledger.map(\.idempotencyKey) == ["sub-8-cycle-1-a1", "sub-8-cycle-1-a2"])
        }
    }

    @Test("PXP: a 503 on the lookup is unavailable; a seeded transaction with the key is found")
    func pxpLookupFaultsAndSeeds() async throws {
        try await withEmulator { emulator async throws in
            emulator.seedDemoResources()
            let client = emulator.pxpClient()
            emulator.pxp.fail(next: 1, with: .status(503), on: .findTransactions)
            #expect(await providerError { try await client.lookUpCharge(idempotencyKey: "sub-77-cycle-3", providerPaymentID: nil) }?.kind == .unavailable)
            let found = try #require(try await client.lookUpCharge(idempotencyKey: "sub-77-cycle-3", providerPaymentID: nil).result)
            #expect(found.outcome == .succeeded)
            #expect(found.providerPaymentID == ProviderEmulator.Demo.pxpTransactionID)
        }
    }

    @Test("Adyen, and Mercado Pago without an order id, have no lookup: unsupported, and nothing is sent")
    func noLookup() async throws {
        try await withEmulator { emulator async throws in
            _ = try await emulator.mercadoPagoClient().charge(
                storedCredential: StoredCredential(token: "PP1", customerID: "c"),
                amount: try Money(minorUnits: 100, currency: "BRL"), reference: "r", idempotencyKey: "k")
            emulator.clearRequestLog()
            #expect(try await emulator.mercadoPagoClient().lookUpCharge(idempotencyKey: "k", providerPaymentID: nil) == .unsupported)
            #expect(try await emulator.adyenClient().lookUpCharge(idempotencyKey: "k", providerPaymentID: nil) == .unsupported)
            #expect(emulator.requests.isEmpty)
        }
    }

    @Test("with a charge latency, many concurrent charges are all answered and each executes once")
    func latencyUnderConcurrency() async throws {
        try await withEmulator({ $0.chargeLatency = .milliseconds(200) }) { emulator async throws in
            let harness = try ChargeHarness(.adyen, emulator)
            let http = CurlHTTPClient(maxConcurrent: 64)
            let client = emulator.adyenClient(http: http)
            let results = try await withThrowingTaskGroup(of: ChargeResult.self) { group in
                for index in 0..<64 {
                    group.addTask {
                        try await client.charge(storedCredential: harness.credential, amount: harness.amount,
                                                reference: "sub-\(index)-cycle-1", idempotencyKey: "charge-\(index)")
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 64)
            #expect(results.allSatisfy { $0.outcome == .succeeded })
            #expect(emulator.adyen.totalExecutedCharges == 64)
            #expect(Set(emulator.adyen.allExecutedCharges.compactMap(\.idempotencyKey)).count == 64)
            #expect(emulator.totalExecutedCharges == 64)
        }
    }

    @Test("a charge latency longer than the client's deadline is a timeout after executing")
    func latencyBeyondDeadline() async throws {
        try await withChargeHarness(.mercadopago, { $0.chargeLatency = longDelay }) { harness async throws in
            let error = await providerError { try await harness.charge(key: "slow", timeout: shortDeadline) }
            #expect(error?.kind == .timeout)
            #expect(harness.executed("slow") == 1)
            harness.emulator.setChargeLatency(nil)
            #expect(harness.emulator.chargeLatency == nil)
            #expect(try await harness.charge(key: "slow").outcome == .succeeded)
            #expect(harness.totalExecuted == 1)
        }
    }
}

@Suite("The emulator's executed-charge ledger over HTTP")
struct ExecutedChargeLedgerTests {
    @Test("GET /_emulator/executed-charges lists executions, not replays, with their keys and results", arguments: ProviderID.allCases)
    func ledger(provider: ProviderID) async throws {
        try await withChargeHarness(provider) { harness async throws in
            harness.script([.declined(code: harness.softCode)])
            _ = try await harness.charge(key: "bench-1-a1")
            _ = try await harness.charge(key: "bench-1-a2")
            _ = try await harness.charge(key: "bench-1-a2")
            let response = try await harness.emulator.send("GET", ProviderEmulator.ledgerPath)
            #expect(response.status == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            let rows = try #require(object["charges"] as? [[String]])
            #expect(rows == [[provider.rawValue, "bench-1-a1", "declined:\(harness.softCode)"],
                             [provider.rawValue, "bench-1-a2", "approved"]])
        }
    }
}

extension ChargeLookup {
    /// The found charge, for `#require`.
    var result: ChargeResult? {
        if case .found(let result) = self { return result }
        return nil
    }
}
