import Foundation
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// `/v1/subscriptions` on the admin API and `payhook subscriptions` on the command line: the
/// same operations, validated the same way, audited.
@Suite("Subscriptions on the admin API and the command line", .timeLimit(.minutes(5)))
struct SubscriptionAdminTests {
    typealias Reply = SubscriptionAdminCalls.Reply

    static func call(_ api: SubscriptionAdminAPI, _ method: String, _ path: String, query: String = "", body: String = "") async -> Reply {
        await SubscriptionAdminCalls.call(api, method, path, query: query, body: body)
    }

    static func body(token: String = #""vault_token": {"provider": "adyen", "token": "tok-active"}"#, reference: String = "sub-42",
                     extra: String = "") -> String {
        SubscriptionAdminCalls.body(token: token, reference: reference, extra: extra)
    }

    @Test("create answers 201 with the subscription; show lists its charges; duplicates, unknown and unusable tokens are refused naming the field")
    func create() async throws {
        let harness = try await SubscriptionHarness.make("sub_api_create", emulator: false)
        try await harness.seedToken(.adyen, token: "tok-active")
        let disabled = try await harness.seedToken(.adyen, token: "tok-disabled", status: "disabled")
        let expired = try await harness.seedToken(.pxp, token: "tok-expired", status: "expired")
        let api = SubscriptionAdminAPI(operations: harness.operations)

        let created = await Self.call(api, "POST", "/v1/subscriptions", body: Self.body(extra: #", "start_at": "2030-01-31T09:00:00Z""#))
        #expect(created.status == 201, "\(created.json)")
        let id = try #require((created.json["id"] as? NSNumber)?.int64Value)
        #expect(created.json["status"] as? String == "active")
        #expect(created.json["next_charge_at"] as? String == "2030-01-31T09:00:00.000Z")
        #expect((created.json["amount"] as? [String: Any])?["value"] as? Int == 1999)
        #expect((created.json["vault_token"] as? [String: Any])?["provider"] as? String == "adyen")

        let shown = await Self.call(api, "GET", "/v1/subscriptions/\(id)")
        #expect(shown.status == 200)
        #expect((shown.json["charges"] as? [Any])?.isEmpty == true)
        #expect(shown.json["reference"] as? String == "sub-42")

        let duplicate = await Self.call(api, "POST", "/v1/subscriptions", body: Self.body())
        #expect(duplicate.status == 409 && duplicate.field == "reference" && duplicate.code == "conflict")
        let unknown = await Self.call(api, "POST", "/v1/subscriptions",
                                      body: Self.body(token: #""vault_token": {"provider": "adyen", "token": "nope"}"#, reference: "r2"))
        #expect(unknown.status == 404 && unknown.field == "vault_token")
        let refused = await Self.call(api, "POST", "/v1/subscriptions",
                                      body: Self.body(token: #""vault_token": {"provider": "adyen", "token": "tok-disabled"}"#, reference: "r3"))
        #expect(refused.status == 400 && refused.field == "vault_token" && (refused.json["message"] as? String)?.contains("disabled") == true)
        let byID = await Self.call(api, "POST", "/v1/subscriptions", body: Self.body(token: #""vault_token_id": \#(expired)"#, reference: "r4"))
        #expect(byID.status == 400 && byID.field == "vault_token_id")
        let noToken = await Self.call(api, "POST", "/v1/subscriptions", body: Self.body(token: #""vault_token_id": \#(disabled + 1000)"#, reference: "r5"))
        #expect(noToken.status == 404 && noToken.field == "vault_token_id")
        let badAmount = await Self.call(api, "POST", "/v1/subscriptions",
                                        body: Self.body(reference: "r6").replacingOccurrences(of: "1999", with: "19.99"))
        #expect(badAmount.status == 400 && badAmount.field == "amount.value" && badAmount.code == "invalid_argument")
        let notJSON = await Self.call(api, "POST", "/v1/subscriptions", body: "reference=r7")
        #expect(notJSON.status == 400 && notJSON.field == "body")

        #expect(try await harness.int("SELECT count(*) AS n FROM subscriptions") == 1)
        #expect(try await harness.text("SELECT actor || ':' || action || ':' || target AS v FROM audit_log") == "admin-api:subscription.create:subscription:\(id)")
    }

    @Test("cancel, pause and resume change status once, are audited, and refuse what the status forbids")
    func actions() async throws {
        let harness = try await SubscriptionHarness.make("sub_api_actions", emulator: false)
        let token = try await harness.seedToken(.mercadopago)
        let id = try await harness.subscribe(token: token, every: 1, unit: .week)
        let api = SubscriptionAdminAPI(operations: harness.operations)

        let paused = await Self.call(api, "POST", "/v1/subscriptions/\(id)/pause", body: #"{"note": "customer asked", "actor": "alice"}"#)
        #expect(paused.status == 200 && paused.json["changed"] as? Bool == true)
        #expect((paused.json["subscription"] as? [String: Any])?["status"] as? String == "paused")
        #expect(await Self.call(api, "POST", "/v1/subscriptions/\(id)/pause").json["changed"] as? Bool == false)

        // Resumed three weeks later: the weeks it was paused are not charged.
        harness.clock.advance(by: 21 * 86_400 + 60)
        let resumed = await Self.call(api, "POST", "/v1/subscriptions/\(id)/resume")
        #expect(resumed.status == 200)
        let subscription = try await harness.subscription(id)
        #expect(subscription.status == .active && subscription.cycle == 5 && subscription.nextChargeAt > harness.clock.now)

        let listed = await Self.call(api, "GET", "/v1/subscriptions", query: "status=active")
        #expect((listed.json["subscriptions"] as? [[String: Any]])?.count == 1)
        #expect(await Self.call(api, "GET", "/v1/subscriptions", query: "status=gone").field == "status")

        let canceled = await Self.call(api, "POST", "/v1/subscriptions/\(id)/cancel")
        #expect(canceled.status == 200 && (canceled.json["subscription"] as? [String: Any])?["canceled_at"] is String)
        let resumeCanceled = await Self.call(api, "POST", "/v1/subscriptions/\(id)/resume")
        #expect(resumeCanceled.status == 409 && resumeCanceled.code == "conflict")
        #expect(await Self.call(api, "POST", "/v1/subscriptions/\(id)/cancel").json["changed"] as? Bool == false)

        #expect(await Self.call(api, "GET", "/v1/subscriptions/999999").status == 404)
        #expect(await Self.call(api, "GET", "/v1/subscriptions/abc").field == "id")
        #expect(await Self.call(api, "DELETE", "/v1/subscriptions/\(id)").status == 405)
        #expect(await Self.call(api, "POST", "/v1/subscriptions/\(id)/cancel", body: #"{"why": 1}"#).field == "why")
        #expect(await Self.call(api, "GET", "/v1/dead-letters").status == 0)  // not ours

        #expect(try await harness.text(
            "SELECT string_agg(actor || '(' || coalesce(actor_note, '') || '):' || action, ',' ORDER BY id) AS v FROM audit_log")
                == "test():subscription.create,admin-api(alice):subscription.pause,admin-api():subscription.resume,admin-api():subscription.cancel",
                "the caller's credential is the actor; the body's actor only a note")
    }

    @Test("the admin listener serves /v1/subscriptions behind the bearer token")
    func wiredIntoServer() async throws {
        try await IngressHarness.with("sub_api_server") { (ingress) async throws in
            try await ingress.database.query("INSERT INTO vault_tokens (provider, token, shopper_reference) VALUES ('adyen', 'tok-active', 's-1')")
            let body = Array(Self.body().utf8)
            let denied = try #require(await HTTPTestClient.send(port: ingress.adminPort, method: "POST", path: "/v1/subscriptions", body: body))
            #expect(denied.status == 401)
            let created = try #require(await HTTPTestClient.send(
                port: ingress.adminPort, method: "POST", path: "/v1/subscriptions",
                headers: [("Authorization", "Bearer \(TestSecrets.adminToken)"), ("Content-Type", "application/json")], body: body))
            #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        }
    }

    @Test("payhook subscriptions create, list, show and cancel; usage errors exit 2 naming the option; a disabled token is refused")
    func commandLine() async throws {
        let harness = try await SubscriptionHarness.make("sub_cli", emulator: false)
        try await harness.seedToken(.adyen, token: "tok-cli")
        try await harness.seedToken(.adyen, token: "tok-off", status: "disabled")
        let env = ["DATABASE_URL": harness.database.url, "USER": "oncall-test"]
        let base = ["subscriptions", "create", "--reference", "cli-1", "--amount", "1999", "--currency", "EUR", "--every", "1",
                    "--unit", "month", "--token-provider", "adyen", "--token", "tok-cli"]

        let created = await PayhookCLI.capture(base + ["--json"], environment: env)
        #expect(created.termination == .exited(0), "\(created.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(created.standardOutput.utf8)) as? [String: Any])
        let id = try #require((object["id"] as? NSNumber)?.int64Value)

        let badAmount = await PayhookCLI.capture(base.map { $0 == "1999" ? "19.99" : $0 }, environment: env)
        #expect(badAmount.termination == .exited(2))
        #expect(badAmount.standardError.contains("--amount"), "\(badAmount.standardError)")
        let missing = await PayhookCLI.capture(["subscriptions", "create", "--reference", "x"], environment: env)
        #expect(missing.termination == .exited(2))
        let off = await PayhookCLI.capture(base.map { $0 == "tok-cli" ? "tok-off" : ($0 == "cli-1" ? "cli-2" : $0) }, environment: env)
        #expect(off.termination == .exited(2))
        #expect(off.standardError.contains("disabled"), "\(off.standardError)")

        let listed = await PayhookCLI.capture(["subscriptions", "list", "--json"], environment: env)
        #expect(listed.termination == .exited(0))
        let array = try #require(try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]])
        #expect(array.compactMap { ($0["id"] as? NSNumber)?.int64Value } == [id])
        let table = await PayhookCLI.capture(["subscriptions", "list"], environment: env)
        #expect(table.standardOutput.hasPrefix("ID") && table.standardOutput.contains("cli-1"), "\(table.standardOutput)")

        let shown = await PayhookCLI.capture(["subscriptions", "show", String(id)], environment: env)
        #expect(shown.termination == .exited(0))
        #expect(shown.standardOutput.contains("subscription \(id) cli-1 (active)"), "\(shown.standardOutput)")

        let canceled = await PayhookCLI.capture(["subscriptions", "cancel", String(id), "--note", "churned", "--json"], environment: env)
        #expect(canceled.termination == .exited(0), "\(canceled.standardError)")
        #expect(try await harness.subscription(id).status == .canceled)
        let account = OperatorActorTests.account
        #expect(try await harness.text("SELECT string_agg(actor || '(' || coalesce(actor_note, '') || '):' || action, ',' ORDER BY id) AS v FROM audit_log")
                == "oncall-test(os:\(account)):subscription.create,oncall-test(os:\(account)):subscription.cancel")
        let unknown = await PayhookCLI.capture(["subscriptions", "show", "999999"], environment: env)
        #expect(unknown.termination == .exited(1))
        let noID = await PayhookCLI.capture(["subscriptions", "cancel"], environment: env)
        #expect(noID.termination == .exited(2))
    }
}
