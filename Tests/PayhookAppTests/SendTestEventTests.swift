import Foundation
import PayhookCore
import PayhookIngress
import PayhookProviders
import Testing
@testable import PayhookApp

/// Every event `payhook send-test` lists is genuine to ingress's verifier and means what its
/// name says to payhook's decoders (the emulator resource it seeds included), without a server.
@Suite("send-test events")
struct SendTestEventTests {
    static func configuration() throws -> Configuration {
        try Configuration.parse(environment: TestSecrets.environment) { _ in "" }
    }

    static func input(_ provider: ProviderID, id: String? = nil, account: String? = nil) throws -> SendTestInput {
        let ring = try #require(try configuration().webhookSecrets.ring(provider: provider, account: account))
        return SendTestInput(
            reference: "ref-42", amount: try Money(minorUnits: 2500, currency: provider == .mercadopago ? "BRL" : "EUR"), id: id,
            key: try #require(ring.keys.first), pxpAlgorithm: .sha256, adyenMerchantAccount: "PayhookECOM",
            pxpMerchant: "PAYHOOK-1", pxpSite: "SITE-EU", now: Date())
    }

    @Test("an Adyen event's --amount is ISO minor units, sent as Adyen's amount.value (CLP 12345 is 1234500)")
    func adyenAmountConverted() throws {
        let authorisation = try #require(SendTestEvent.find(provider: .adyen, name: "AUTHORISATION"))
        var input = try Self.input(.adyen)
        input.amount = try Money(minorUnits: 12345, currency: "CLP")
        let delivery = authorisation.build(input)
        #expect(String(decoding: delivery.body, as: UTF8.self).contains(#""amount":{"currency":"CLP","value":1234500}"#))
        #expect(try Self.verified(authorisation, delivery) != nil)
        guard case .payment(let payment)? = try AdyenEventDecoder.decode(body: delivery.body).first else {
            Issue.record("not a payment event")
            return
        }
        #expect(payment.amount == (try Money(minorUnits: 12345, currency: "CLP")))
    }

    static func verified(_ event: SendTestEvent, _ delivery: SendTestDelivery, account: String? = nil) throws -> VerifiedDelivery? {
        let request = WebhookRequest(
            provider: event.provider, account: account, rawQuery: delivery.query,
            headers: delivery.headers.map { (name: $0.0, value: $0.1) }, body: delivery.body,
            remoteAddress: "127.0.0.1", receivedAt: Date())
        guard case .verifier(let verifier) = WebhookVerifiers(configuration: try configuration()).lookup(provider: event.provider, account: account)
        else { return nil }
        guard case .verified(let delivery) = verifier.verify(request, now: request.receivedAt) else { return nil }
        return delivery
    }

    /// What each event must decode to: a payment's status (or `captureFailed`), or a token change.
    /// An Adyen `REFUND` reports a refund of its amount; whether that refunds the payment in full
    /// is settled against the stored payment's amount when it is applied.
    static let meanings: [String: String] = [
        "adyen AUTHORISATION": "authorized", "adyen CAPTURE": "captured", "adyen CAPTURE_FAILED": "captureFailed",
        "adyen CANCELLATION": "canceled", "adyen REFUND": "partially_refunded", "adyen CHARGEBACK": "charged_back",
        "adyen recurring.token.created": "token created", "adyen recurring.token.disabled": "token disabled",
        "mercadopago order.processed": "captured", "mercadopago order.refunded": "refunded",
        "mercadopago payment.updated": "captured",
        "pxp transaction.authorised": "authorized", "pxp transaction.captured": "captured", "pxp transaction.refused": "declined",
        "pxp token.created": "token active", "pxp token.disabled": "token disabled",
    ]

    static func meaning(of payment: PaymentSnapshot) -> String {
        switch payment.transition {
        case .advance(let status): status.rawValue
        case .captureFailed: "captureFailed"
        default: "\(payment.transition)"
        }
    }

    @Test("verified by ingress's verifier and decoded to what the name says", arguments: SendTestEvent.all.map { "\($0.provider.rawValue) \($0.name)" })
    func event(_ label: String) throws {
        let parts = label.split(separator: " ")
        let provider = try #require(ProviderID(rawValue: String(parts[0])))
        let event = try #require(SendTestEvent.find(provider: provider, name: String(parts[1])))
        let delivery = event.build(try Self.input(event.provider))
        let verified = try #require(try Self.verified(event, delivery), "\(label) is not verified")
        #expect(!verified.dedupKey.isEmpty)
        let expected = try #require(Self.meanings[label], "add \(label) to the table")

        switch event.provider {
        case .adyen:
            let events = try AdyenEventDecoder.decode(body: delivery.body)
            #expect(events.count == 1)
            switch events.first {
            case .payment(let payment)?:
                #expect(Self.meaning(of: payment) == expected)
                #expect(payment.merchantReference == "ref-42")
            case .vaultToken(let token, let change)?:
                #expect("token \(change.rawValue)" == expected)
                #expect(token.shopperReference == "ref-42")
            default: Issue.record("\(label) decoded to \(events)")
            }
            #expect(delivery.seed == nil, "Adyen webhooks are self-contained")
        case .mercadopago:
            let notification = try MercadoPagoNotification.decode(body: delivery.body)
            let seed = try #require(delivery.seed)
            switch notification.resource {
            case .order(let id):
                #expect(seed.path == "mercadopago/orders/\(id)")
                let order = try MercadoPagoOrderDecoder.decode(seed.body)
                #expect(order.status?.rawValue == expected)
                #expect(order.merchantReference == "ref-42")
                #expect(order.payments.first?.amount == (try Money(minorUnits: 2500, currency: "BRL")))
            case .payment(let id):
                #expect(seed.path == "mercadopago/payments/\(id)")
                let payment = try MercadoPagoPaymentDecoder.decode(seed.body)
                #expect(Self.meaning(of: payment) == expected)
                #expect(payment.amount == (try Money(minorUnits: 2500, currency: "BRL")))
            case .other:
                Issue.record("\(label) names neither an order nor a payment")
            }
        case .pxp:
            let notifications = try PXPEventDecoder.decodeAll(body: delivery.body)
            #expect(notifications.count == 1)
            switch notifications.first?.event {
            case .payment(let provisional)?:
                #expect(Self.meaning(of: provisional) == expected)
                let seed = try #require(delivery.seed)
                #expect(seed.path == "pxp/transactions/\(provisional.providerPaymentID)")
                let confirmed = try PXPTransactionDecoder.decode(seed.body)
                #expect(Self.meaning(of: confirmed) == expected)
                #expect(confirmed.merchantReference == "ref-42")
                #expect(confirmed.amount == (try Money(minorUnits: 2500, currency: "EUR")))
            case .vaultToken(let token, _)?:
                #expect("token \(token.status.rawValue)" == expected)
                #expect(delivery.seed == nil)
            default: Issue.record("\(label) decoded to \(String(describing: notifications.first?.event))")
            }
        }
    }

    @Test("--id names the payment an Adyen modification changes, and an order's payment keeps its id across events")
    func idChaining() throws {
        let capture = try #require(SendTestEvent.find(provider: .adyen, name: "capture"))
        let delivery = capture.build(try Self.input(.adyen, id: "8535296650153317"))
        let ids = Dictionary(uniqueKeysWithValues: delivery.ids)
        #expect(ids["originalReference"] == "8535296650153317")
        #expect(ids["pspReference"] != "8535296650153317")
        #expect(try Self.verified(capture, delivery)?.dedupKey.hasSuffix(":CAPTURE:true:8535296650153317") == true)

        let processed = try #require(SendTestEvent.find(provider: .mercadopago, name: "order.processed"))
        let refunded = try #require(SendTestEvent.find(provider: .mercadopago, name: "order.refunded"))
        let first = try MercadoPagoOrderDecoder.decode(try #require(processed.build(try Self.input(.mercadopago, id: "ORD01TESTCHAIN")).seed).body)
        let second = try MercadoPagoOrderDecoder.decode(try #require(refunded.build(try Self.input(.mercadopago, id: "ORD01TESTCHAIN")).seed).body)
        #expect(first.payments.map(\.providerPaymentID) == second.payments.map(\.providerPaymentID))
        #expect(second.payments.first?.refund == .total(try Money(minorUnits: 2500, currency: "BRL")))
    }

    @Test("an account's delivery verifies only on that account's route")
    func accountKey() throws {
        let event = try #require(SendTestEvent.find(provider: .adyen, name: "AUTHORISATION"))
        let delivery = event.build(try Self.input(.adyen, account: "acme-eu"))
        #expect(try Self.verified(event, delivery, account: "acme-eu") != nil)
        #expect(try Self.verified(event, delivery) == nil)
    }

    @Test("--amount is minor units and an ISO code; anything else is refused with the option named", arguments: [
        (["1999", "EUR"], "19.99 EUR"), (["5", "JPY"], "5 JPY"), (["19.99", "EUR"], nil), (["0", "EUR"], nil),
        (["1999", "eur"], nil), (["1999", "EURO"], nil),
    ])
    func amount(_ words: [String], _ expected: String?) {
        switch SendTestCommand.parseAmount(words, default: (1, "EUR")) {
        case .success(let money): #expect(money.description == expected)
        case .failure(let problem):
            #expect(expected == nil, "\(problem.message)")
            #expect(problem.message.hasPrefix("--amount"))
        }
    }
}
