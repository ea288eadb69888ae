import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookSubscriptions

/// `POST /v1/vault-tokens` and `payhook vault-tokens register`: a token a merchant saved with
/// Mercado Pago outside any payment is confirmed against the provider's API (the emulator)
/// before it is stored, audited, idempotent, and can then carry a subscription.
@Suite("Registering saved vault tokens", .timeLimit(.minutes(5)))
struct VaultTokenRegistrationTests {
    static let customer = "1284659970-cUsTmRk2"
    static let profile = "7036b192b541454fa9b9990660dfa1b5"
    static let card = "9120384756"

    /// A payment profile in the shape of Mercado Pago's "Query a specific payment profile"
    /// answer (https://www.mercadopago.com.br/developers/en/docs/automatic-payments-orders/manage-profiles,
    /// statuses from .../automatic-payments-orders/profile-payment-methods-status); synthetic ids.
    static func profileJSON(id: String = profile, status: String = "READY") -> String {
        """
        {"id":"\(id)","created_date":"2025-05-22T14:03:28.653Z","last_updated_date":"2025-05-22T14:03:28.653Z",
         "description":"Monthly plan","max_day_overdue":5,"statement_descriptor":"PAYHOOK","status":"\(status)",
         "sequence_control":"AUTO",
         "payment_methods":[{"payment_method_id":"64abf0f5-3e15-48a5-9be0-a8ac56bbd87a","id":"visa","type":"credit_card",
                             "card_id":\(card),"status":"READY","default_method":true}]}
        """
    }

    /// A saved card in the shape of the Node SDK's `CustomerCardResponse`
    /// (mercadopago/sdk-nodejs src/clients/customerCard); synthetic card data.
    static let cardJSON = """
        {"id":"\(card)","customer_id":"\(customer)","expiration_month":11,"expiration_year":2030,
         "first_six_digits":"940000","last_four_digits":"0007",
         "payment_method":{"id":"master","name":"Mastercard","payment_type_id":"credit_card"},
         "security_code":{"length":3,"card_location":"back"},
         "cardholder":{"name":"APRO","identification":{"type":"DNI","number":"12345678"}},
         "date_created":"2025-03-01T10:00:00.000-04:00","date_last_updated":"2025-03-01T10:00:00.000-04:00",
         "user_id":"1873904477","live_mode":false}
        """

    static func seedProvider(_ emulator: ProviderEmulator) {
        emulator.mercadoPago.putPaymentProfile(customerID: customer, profileID: profile, json: profileJSON())
        emulator.mercadoPago.putPaymentProfile(customerID: customer, profileID: "pp-pending", json: profileJSON(id: "pp-pending", status: "PENDING"))
        emulator.mercadoPago.putPaymentProfile(customerID: "someone-else", profileID: "pp-other", json: profileJSON(id: "pp-other"))
        emulator.mercadoPago.putCustomerCard(customerID: customer, cardID: card, json: cardJSON)
    }

    static func body(token: String = profile, kind: String = "payment_profile", customer: String = customer,
                     shopper: String = "shopper-7781", provider: String = "mercadopago", extra: String = "") -> String {
        #"{"provider": "\#(provider)", "customer_id": "\#(customer)", "token": "\#(token)", "token_kind": "\#(kind)", "shopper_reference": "\#(shopper)"\#(extra)}"#
    }

    static func call(_ api: VaultTokenAdminAPI, _ body: String, method: String = "POST") async -> SubscriptionAdminTests.Reply {
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            let request = HTTPRequest(method: method, path: "/v1/vault-tokens", rawQuery: "", body: Array(body.utf8), remoteAddress: "127.0.0.1")
            if !api.handle(request, respond: { continuation.resume(returning: $0) }) {
                continuation.resume(returning: HTTPResponse(status: 0))
            }
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return SubscriptionAdminTests.Reply(status: response.status, json: json)
    }

    @Test("a READY payment profile is confirmed and stored (201, audited); the same again answers it (200, nothing written); other values are a 409")
    func registerProfile() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_profile")
        defer { harness.stop() }
        Self.seedProvider(harness.emulator)
        let api = VaultTokenAdminAPI(pool: harness.pool, clients: harness.clients)

        let created = await Self.call(api, Self.body(extra: #", "actor": "alice""#))
        #expect(created.status == 201, "\(created.json)")
        #expect(created.json["created"] as? Bool == true)
        let token = try #require(created.json["vault_token"] as? [String: Any])
        let id = try #require((token["id"] as? NSNumber)?.int64Value)
        #expect(token["token"] as? String == Self.profile)
        #expect(token["token_kind"] as? String == "payment_profile")
        #expect(token["customer_id"] as? String == Self.customer)
        #expect(token["shopper_reference"] as? String == "shopper-7781")
        #expect(token["brand"] as? String == "visa")
        #expect(token["status"] as? String == "active")
        #expect(harness.emulator.mercadoPago.callCount(.paymentProfile, id: "\(Self.customer)/\(Self.profile)") == 1)
        #expect(try await harness.text("SELECT actor || '(' || actor_note || '):' || action || ':' || target AS v FROM audit_log")
                == "admin-api(alice):vault_token.register:vault_token:\(id)", "the caller's credential is the actor, the body's a note")

        let replay = await Self.call(api, Self.body())
        #expect(replay.status == 200, "\(replay.json)")
        #expect(replay.json["created"] as? Bool == false && replay.json["changed"] as? Bool == false)
        #expect(((replay.json["vault_token"] as? [String: Any])?["id"] as? NSNumber)?.int64Value == id)
        #expect(try await harness.int("SELECT count(*) AS n FROM audit_log") == 1, "a replay writes nothing")

        let conflict = await Self.call(api, Self.body(shopper: "shopper-9999"))
        #expect(conflict.status == 409 && conflict.code == "conflict" && conflict.field == "shopper_reference", "\(conflict.json)")
        #expect(try await harness.text("SELECT shopper_reference AS v FROM vault_tokens WHERE id = $1", [.int(id)]) == "shopper-7781")
        #expect(try await harness.int("SELECT count(*) AS n FROM vault_tokens") == 1)
    }

    @Test("a saved card is stored as a card id with the provider's display data; a token learned from a webhook gets its missing shopper reference")
    func registerCard() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_card")
        defer { harness.stop() }
        Self.seedProvider(harness.emulator)
        let api = VaultTokenAdminAPI(pool: harness.pool, clients: harness.clients)

        let created = await Self.call(api, Self.body(token: Self.card, kind: "card_id"))
        #expect(created.status == 201, "\(created.json)")
        let token = try #require(created.json["vault_token"] as? [String: Any])
        #expect(token["token_kind"] as? String == "card_id")
        #expect(token["brand"] as? String == "master" && token["last4"] as? String == "0007" && token["expiry"] as? String == "11/2030")
        let stored = try await harness.text("SELECT row_to_json(t)::text AS v FROM vault_tokens t") ?? ""
        #expect(!stored.contains("940000") && !stored.contains("APRO"), "no BIN or cardholder is stored: \(stored)")

        // The same card as processing stores it from a payment (no shopper reference): the
        // registration fills the gap, audited, and keeps the row.
        try await harness.pool.query("UPDATE vault_tokens SET shopper_reference = NULL")
        let filled = await Self.call(api, Self.body(token: Self.card, kind: "card_id", shopper: "shopper-42"))
        #expect(filled.status == 200 && filled.json["changed"] as? Bool == true, "\(filled.json)")
        #expect(try await harness.text("SELECT shopper_reference AS v FROM vault_tokens") == "shopper-42")
        #expect(try await harness.int("SELECT count(*) AS n FROM audit_log WHERE action = 'vault_token.register'") == 2)
        let otherKind = await Self.call(api, Self.body(token: Self.card, kind: "payment_profile", shopper: "shopper-42"))
        #expect(otherKind.status == 422 && otherKind.field == "token", "Mercado Pago knows no profile by a card's id: \(otherKind.json)")
    }

    @Test("what the provider does not know, or cannot charge, is refused with 422 and nothing is stored; PXP cannot be confirmed")
    func refusals() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_refused")
        defer { harness.stop() }
        Self.seedProvider(harness.emulator)
        let api = VaultTokenAdminAPI(pool: harness.pool, clients: harness.clients)

        let unknownProfile = await Self.call(api, Self.body(token: "pp-nobody-knows"))
        #expect(unknownProfile.status == 422 && unknownProfile.code == "unprocessable" && unknownProfile.field == "token", "\(unknownProfile.json)")
        #expect((unknownProfile.json["message"] as? String)?.contains("does not know") == true)
        let unknownCard = await Self.call(api, Self.body(token: "1111", kind: "card_id"))
        #expect(unknownCard.status == 422 && unknownCard.field == "token", "\(unknownCard.json)")
        let otherCustomer = await Self.call(api, Self.body(token: Self.card, kind: "card_id", customer: "someone-else"))
        #expect(otherCustomer.status == 422, "\(otherCustomer.json)")
        let othersProfile = await Self.call(api, Self.body(token: "pp-other"))
        #expect(othersProfile.status == 422 && othersProfile.field == "token", "customer_id_mismatch: \(othersProfile.json)")
        let pending = await Self.call(api, Self.body(token: "pp-pending"))
        #expect(pending.status == 422 && (pending.json["message"] as? String)?.contains("PENDING") == true, "\(pending.json)")
        let pxp = await Self.call(api, #"{"provider": "pxp", "token": "tok-1", "shopper_reference": "s-1"}"#)
        #expect(pxp.status == 422 && pxp.field == "provider", "\(pxp.json)")
        #expect((pxp.json["message"] as? String)?.contains("cannot be confirmed for this provider") == true)
        let adyenUnknown = await Self.call(api, #"{"provider": "adyen", "token": "tok-1", "shopper_reference": "s-1"}"#)
        #expect(adyenUnknown.status == 422 && adyenUnknown.field == "token", "\(adyenUnknown.json)")
        #expect(harness.emulator.adyen.callCount(.storedPaymentMethods, id: "s-1") == 1)
        harness.emulator.mercadoPago.fail(next: 1, with: .status(503), on: .paymentProfile)
        let down = await Self.call(api, Self.body())
        #expect(down.status == 502 && down.code == "provider_unavailable", "\(down.json)")
        #expect(!((down.json["message"] as? String) ?? "").contains(harness.emulator.configuration.mercadoPagoAccessToken))
        #expect(try await harness.int("SELECT count(*) AS n FROM vault_tokens") == 0)
        #expect(try await harness.int("SELECT count(*) AS n FROM audit_log") == 0)
    }

    @Test("malformed bodies are refused with 400 naming the field, before the provider is asked")
    func badInput() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_bad")
        defer { harness.stop() }
        let api = VaultTokenAdminAPI(pool: harness.pool, clients: harness.clients)
        let cases: [(String, String)] = [
            ("not json", "body"),
            (#"{"provider": "visa", "token": "t"}"#, "provider"),
            (#"{"provider": "mercadopago", "customer_id": "c", "token": "t"}"#, "token_kind"),
            (#"{"provider": "mercadopago", "token": "t", "token_kind": "card_id"}"#, "customer_id"),
            (#"{"provider": "mercadopago", "customer_id": "c", "token_kind": "card_id"}"#, "token"),
            (#"{"provider": "mercadopago", "customer_id": "c", "token": "t", "token_kind": "card"}"#, "token_kind"),
            (#"{"provider": "adyen", "token": "t", "token_kind": "card_id"}"#, "token_kind"),
            (#"{"provider": "adyen", "token": "t"}"#, "shopper_reference"),
            (Self.body(token: "4111111111111111", kind: "card_id"), "token"),
            (Self.body(extra: #", "card_number": "x""#), "card_number"),
        ]
        for (body, field) in cases {
            let reply = await Self.call(api, body)
            #expect(reply.status == 400 && reply.code == "invalid_argument" && reply.field == field, "\(body): \(reply.json)")
        }
        #expect(await Self.call(api, "", method: "GET").status == 405)
        #expect(harness.emulator.mercadoPago.callCount(.paymentProfile) + harness.emulator.mercadoPago.callCount(.customerCard) == 0)
    }

    @Test("payhook vault-tokens register confirms with the provider, answers a repeat, and refuses an unknown token with exit 2")
    func commandLine() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_cli")
        defer { harness.stop() }
        Self.seedProvider(harness.emulator)
        let env = ["DATABASE_URL": harness.database.url, "USER": "oncall-test",
                   "PAYHOOK_MERCADOPAGO_ACCESS_TOKEN": harness.emulator.configuration.mercadoPagoAccessToken,
                   "PAYHOOK_MERCADOPAGO_BASE_URL": harness.emulator.baseURL(for: .mercadopago).absoluteString]
        let base = ["vault-tokens", "register", "--provider", "mercadopago", "--customer", Self.customer,
                    "--payment-profile-id", Self.profile, "--shopper-reference", "shopper-7781"]

        let created = await PayhookCLI.capture(base + ["--json"], environment: env)
        #expect(created.termination == .exited(0), "\(created.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(created.standardOutput.utf8)) as? [String: Any])
        #expect(object["created"] as? Bool == true)
        #expect(try await harness.text("SELECT actor || '(' || actor_note || '):' || action AS v FROM audit_log")
                == "oncall-test(os:\(OperatorActorTests.account)):vault_token.register")

        let again = await PayhookCLI.capture(base, environment: env)
        #expect(again.termination == .exited(0) && again.standardOutput.contains("already registered"), "\(again.standardOutput)")
        let unknown = await PayhookCLI.capture(base.map { $0 == Self.profile ? "pp-unknown" : $0 }, environment: env)
        #expect(unknown.termination == .exited(2))
        #expect(unknown.standardError.contains("does not know"), "\(unknown.standardError)")
        let noCustomer = await PayhookCLI.capture(["vault-tokens", "register", "--provider", "mercadopago", "--card-id", "1"], environment: env)
        #expect(noCustomer.termination == .exited(2) && noCustomer.standardError.contains("--customer"), "\(noCustomer.standardError)")
        let both = await PayhookCLI.capture(base + ["--card-id", Self.card], environment: env)
        #expect(both.termination == .exited(2))
        let adyen = await PayhookCLI.capture(["vault-tokens", "register", "--provider", "adyen", "--card-id", "x1"], environment: env)
        #expect(adyen.termination == .exited(2) && adyen.standardError.contains("--shopper-reference"), "\(adyen.standardError)")
        let pxp = await PayhookCLI.capture(["vault-tokens", "register", "--provider", "pxp", "--card-id", "x1"], environment: env)
        #expect(pxp.termination == .exited(2) && pxp.standardError.contains("cannot be confirmed"), "\(pxp.standardError)")
        #expect(try await harness.int("SELECT count(*) AS n FROM vault_tokens") == 1)
    }

    @Test("end to end: a registered payment profile carries a subscription charged against the emulator; a registered bare card id cannot")
    func registerThenCharge() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_charge")
        defer { harness.stop() }
        Self.seedProvider(harness.emulator)
        let tokens = VaultTokenAdminAPI(pool: harness.pool, clients: harness.clients)
        let subscriptions = SubscriptionAdminAPI(operations: harness.operations)

        #expect(await Self.call(tokens, Self.body()).status == 201)
        let subscribed = await SubscriptionAdminTests.call(subscriptions, "POST", "/v1/subscriptions", body: SubscriptionAdminTests.body(
            token: #""vault_token": {"provider": "mercadopago", "token": "\#(Self.profile)"}"#, reference: "sub-saved-card")
            .replacingOccurrences(of: "EUR", with: "BRL"))
        #expect(subscribed.status == 201, "\(subscribed.json)")
        let id = try #require((subscribed.json["id"] as? NSNumber)?.int64Value)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        let executed = try #require(harness.emulator.executed(.mercadopago).first)
        #expect(executed.requestFields["automatic_payments.payment_profile_id"] == Self.profile)

        #expect(await Self.call(tokens, Self.body(token: Self.card, kind: "card_id")).status == 201)
        let onCard = await SubscriptionAdminTests.call(subscriptions, "POST", "/v1/subscriptions", body: SubscriptionAdminTests.body(
            token: #""vault_token": {"provider": "mercadopago", "token": "\#(Self.card)"}"#, reference: "sub-bare-card"))
        #expect(onCard.status == 400 && (onCard.json["message"] as? String)?.contains("payment profile") == true, "\(onCard.json)")
    }

    /// Two tokens of one shopper in the shape of Adyen's `ListStoredPaymentMethodsResponse`
    /// entries (official Node library `src/typings/checkout/storedPaymentMethodResource.ts`);
    /// synthetic ids and card data.
    static func seedAdyen(_ emulator: ProviderEmulator) {
        emulator.adyen.putStoredPaymentMethod(shopperReference: "shopper-adyen-1", json: """
            {"id":"M5N7TQ4TG5PFWR50","brand":"visa","expiryMonth":"03","expiryYear":"30","holderName":"J. Smith",
             "lastFour":"1111","name":"VISA","type":"scheme","shopperReference":"shopper-adyen-1",
             "supportedRecurringProcessingModels":["Subscription","CardOnFile"]}
            """)
        emulator.adyen.putStoredPaymentMethod(shopperReference: "shopper-adyen-1", json: """
            {"id":"QX9KLM3CF8D7R2N1","brand":"mc","expiryMonth":"08","expiryYear":"29","lastFour":"4444","type":"scheme",
             "supportedRecurringProcessingModels":["CardOnFile"]}
            """)
    }

    @Test("an Adyen token is confirmed through GET /storedPaymentMethods for its shopper, then carries a subscription charged against the emulator")
    func adyenRegisterThenCharge() async throws {
        let harness = try await SubscriptionHarness.make("vt_register_adyen")
        defer { harness.stop() }
        Self.seedAdyen(harness.emulator)
        let tokens = VaultTokenAdminAPI(pool: harness.pool, clients: harness.clients)
        let subscriptions = SubscriptionAdminAPI(operations: harness.operations)

        let created = await Self.call(tokens, #"{"provider": "adyen", "token": "M5N7TQ4TG5PFWR50", "shopper_reference": "shopper-adyen-1"}"#)
        #expect(created.status == 201, "\(created.json)")
        let token = try #require(created.json["vault_token"] as? [String: Any])
        #expect(token["brand"] as? String == "visa" && token["last4"] as? String == "1111" && token["expiry"] as? String == "03/2030")
        #expect(token["account"] as? String == harness.emulator.configuration.adyenMerchantAccount)
        #expect(token["token_kind"] is NSNull)
        let stored = try await harness.text("SELECT row_to_json(t)::text AS v FROM vault_tokens t") ?? ""
        #expect(!stored.contains("Smith"), "the holder's name is not stored: \(stored)")

        let otherShopper = await Self.call(tokens, #"{"provider": "adyen", "token": "M5N7TQ4TG5PFWR50", "shopper_reference": "shopper-2"}"#)
        #expect(otherShopper.status == 422 && otherShopper.field == "token", "\(otherShopper.json)")
        let cardOnFileOnly = await Self.call(tokens, #"{"provider": "adyen", "token": "QX9KLM3CF8D7R2N1", "shopper_reference": "shopper-adyen-1"}"#)
        #expect(cardOnFileOnly.status == 422 && (cardOnFileOnly.json["message"] as? String)?.contains("Subscription") == true,
                "\(cardOnFileOnly.json)")

        let subscribed = await SubscriptionAdminTests.call(subscriptions, "POST", "/v1/subscriptions", body: SubscriptionAdminTests.body(
            token: #""vault_token": {"provider": "adyen", "token": "M5N7TQ4TG5PFWR50"}"#, reference: "sub-adyen-saved"))
        #expect(subscribed.status == 201, "\(subscribed.json)")
        let id = try #require((subscribed.json["id"] as? NSNumber)?.int64Value)
        #expect(try await harness.scheduler().tick(now: harness.clock.now) == 1)
        try await harness.runChargeJobs(harness.handler())
        #expect(try await harness.chargeSummary(id) == ["1/1:succeeded"])
        let executed = try #require(harness.emulator.executed(.adyen).first)
        #expect(executed.requestFields["paymentMethod.storedPaymentMethodId"] == "M5N7TQ4TG5PFWR50", "\(executed.requestFields)")
        #expect(executed.requestFields["shopperReference"] == "shopper-adyen-1")
    }
}
