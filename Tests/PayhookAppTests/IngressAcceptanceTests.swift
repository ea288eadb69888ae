import Foundation
import PayhookCrypto
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// Valid deliveries end as exactly one durable `inbound_events` row, answered 200 only after
/// the commit (DESIGN.md invariant 1). Deliveries are signed here, independently of the verifiers.
@Suite("Ingress accepts signed deliveries", .timeLimit(.minutes(5)))
struct IngressAcceptanceTests {
    enum Provider: String, CaseIterable, Sendable {
        case mercadopago, adyen, pxp

        func delivery() -> SignedDelivery {
            switch self {
            case .mercadopago: Sign.mercadoPago()
            case .adyen: Sign.adyen()
            case .pxp: Sign.pxp()
            }
        }
    }

    @Test("the test signers reproduce the providers' published vectors")
    func signersMatchPublishedVectors() throws {
        // Adyen's own library tests (Fixtures/adyen.json, "generic").
        let adyenKey = try Hex.decode("DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00")
        var item = Sign.AdyenItem()
        item.pspReference = "pspReference"
        item.originalReference = "originalReference"
        item.merchantAccountCode = "merchantAccount"
        item.merchantReference = "reference"
        item.value = 1000
        item.currency = "EUR"
        item.eventCode = "EVENT"
        item.success = "true"
        #expect(Base64.encode(HMAC.authenticationCode(.sha256, key: adyenKey, message: Array(item.signingString.utf8)))
                == "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc=")
        // Mercado Pago SDK fixture (Fixtures/mercadopago.json, "order_id_lowercase").
        #expect(Sign.mercadoPagoSignature(
            secret: "your_secret_key_here", dataID: "ord01jq4s4ky8hwq6na5pxb65b3d3",
            requestID: "2066ca19-c6f1-498a-be75-1923005edd06", ts: "1742505638683")
                == "ts=1742505638683,v1=633f91233312dd391ec75fa0bea539cfc2d6c4918873305b84a96cc1c58db71c")
    }

    @Test("a valid delivery is answered 200 and stored once, byte for byte, as pending", arguments: Provider.allCases)
    func validDeliveryIsStored(provider: Provider) async throws {
        try await IngressHarness.with("accept_\(provider.rawValue)") { (ingress) async throws in
            let delivery = provider.delivery()
            let response = try await ingress.post(delivery)
            #expect(response.status == 200, "\(response)")
            if provider == .adyen { #expect(response.text == "[accepted]") }

            // The 2xx comes after the commit: the row must be there now, without waiting.
            let rows = try await ingress.database.inboundRows(dedupKey: delivery.expectedDedupKey)
            try #require(rows.count == 1, "rows for \(delivery.expectedDedupKey): \(rows.count)")
            let row = rows[0]
            #expect(row.provider == provider.rawValue)
            #expect(row.account == "")
            #expect(row.body == delivery.body, "raw body bytes changed")
            #expect(row.query == delivery.query)
            #expect(row.status == "pending")
            let all = try await ingress.database.query("SELECT count(*) AS n FROM inbound_events").rows[0].decode("n", as: Int.self)
            #expect(all == 1)
        }
    }

    @Test("the per-account route verifies with the account's own key ring and stores the account")
    func perAccountRoute() async throws {
        try await IngressHarness.with("accept_account") { (ingress) async throws in
            let delivery = Sign.adyen(hexKey: TestSecrets.adyenAcmeEU, account: "acme-eu")
            let response = try await ingress.post(delivery)
            #expect(response.status == 200, "\(response)")
            #expect(response.text == "[accepted]")
            let rows = try await ingress.database.inboundRows(dedupKey: delivery.expectedDedupKey)
            #expect(rows.map(\.account) == ["acme-eu"])
            #expect(rows.first?.body == delivery.body)

            // The account's key is not valid on the default route, nor the default key on the account's.
            let crossed = Sign.adyen(hexKey: TestSecrets.adyenAcmeEU)
            #expect(try await ingress.post(crossed).status == 401)
            let crossedBack = Sign.adyen(hexKey: TestSecrets.adyen, account: "acme-eu")
            #expect(try await ingress.post(crossedBack).status == 401)
        }
    }

    @Test("a delivery signed with the previous key of a rotating ring is accepted", arguments: Provider.allCases)
    func rotatedSecretAccepted(provider: Provider) async throws {
        try await IngressHarness.with("rotate_\(provider.rawValue)") { (ingress) async throws in
            let delivery: SignedDelivery = switch provider {
            case .mercadopago: Sign.mercadoPago(secret: TestSecrets.mercadoPagoPrevious)
            case .adyen: Sign.adyen(hexKey: TestSecrets.adyenPrevious)
            case .pxp: Sign.pxp(key: TestSecrets.pxpPrevious)
            }
            #expect(try await ingress.post(delivery).status == 200)
            #expect(try await ingress.database.inboundRows(dedupKey: delivery.expectedDedupKey).count == 1)
        }
    }

    @Test("PXP: an array-bodied delivery, as PXP's own example posts it, is verified, answered 200 and stored once")
    func pxpArrayBody() async throws {
        try await IngressHarness.with("pxp_array") { (ingress) async throws in
            let events = String(decoding: Sign.pxpBody(), as: UTF8.self) + "," + String(decoding: Sign.pxpBody(), as: UTF8.self)
            let delivery = Sign.pxp(body: Array("[\(events)]".utf8))
            #expect(try await ingress.post(delivery).status == 200)
            #expect(try await ingress.post(delivery).status == 200)
            #expect(try await ingress.database.inboundRows(dedupKey: delivery.expectedDedupKey).count == 1)
        }
    }

    @Test("a re-sent delivery and 20 concurrent copies are all answered 200 and stored once", arguments: Provider.allCases)
    func duplicatesStoredOnce(provider: Provider) async throws {
        try await IngressHarness.with("dup_\(provider.rawValue)") { (ingress) async throws in
            let delivery = provider.delivery()
            #expect(try await ingress.post(delivery).status == 200)
            #expect(try await ingress.post(delivery).status == 200, "a plain retry must be acknowledged")

            let concurrent = provider.delivery()
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { await ingress.send(concurrent)?.status ?? -1 } }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 20))
            #expect(try await ingress.database.inboundRows(dedupKey: delivery.expectedDedupKey).count == 1)
            #expect(try await ingress.database.inboundRows(dedupKey: concurrent.expectedDedupKey).count == 1)
            let all = try await ingress.database.query("SELECT count(*) AS n FROM inbound_events").rows[0].decode("n", as: Int.self)
            #expect(all == 2)
        }
    }

    @Test("a Mercado Pago body whose data.id differs from the signed one only in case is stored under the signed id")
    func mercadoPagoBodyIDCaseDifference() async throws {
        try await IngressHarness.with("accept_mp_case") { (ingress) async throws in
            // Mercado Pago's docs sign the lowercased id; the body may carry the id as the API spells it.
            let signedID = "ord01jq4s4ky8hwq6na5pxb65b3d" + String(Int.random(in: 100...999))
            let requestID = UUID().uuidString.lowercased()
            let ts = String(Int(Date().timeIntervalSince1970 * 1000))
            let body = Array(#"{"id":7001,"type":"order","action":"order.processed","data":{"id":"\#(signedID.uppercased())"}}"#.utf8)
            var delivery = Sign.mercadoPago(body: body)
            delivery.query = "data.id=\(signedID)&type=order"
            delivery = delivery
                .with(header: "x-request-id", requestID)
                .with(header: "x-signature", Sign.mercadoPagoSignature(
                    secret: TestSecrets.mercadoPago, dataID: signedID, requestID: requestID, ts: ts))
            #expect(try await ingress.post(delivery).status == 200)
            let rows = try await ingress.database.inboundRows(dedupKey: "order:\(signedID):order.processed:7001")
            #expect(rows.map(\.body) == [body])
        }
    }

    @Test("malformed JSON under a valid Mercado Pago signature is stored: MP signs no body")
    func malformedJSONWithValidMercadoPagoSignature() async throws {
        try await IngressHarness.with("accept_mp_malformed") { (ingress) async throws in
            let body = Array("{\"id\": 12, \"type\": \"payment\", broken".utf8)
            let delivery = Sign.mercadoPago(body: body)
            #expect(try await ingress.post(delivery).status == 200)
            #expect(try await ingress.database.inboundCount(body: body) == 1)
        }
    }
}
