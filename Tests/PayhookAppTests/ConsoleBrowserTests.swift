import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookConsole
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// The console in a real browser: `ops/test` installs Debian's chromium and chromium-driver and a
/// virtualenv with Selenium, and names its interpreter in `PAYHOOK_BROWSER_TEST_PYTHON`.
/// Scripts/console_browser_test.py checks what the operator sees; this test seeds what it
/// needs and checks the database afterwards. Screenshots: `.build/console-screenshots/`.
@Suite("On-call console in a browser", .timeLimit(.minutes(5)))
struct ConsoleBrowserTests {
    static let python = ProcessInfo.processInfo.environment["PAYHOOK_BROWSER_TEST_PYTHON"]
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Scripts/console_browser_test.py").path
    /// `<package>/.build/console-screenshots`, from this file's place in the package.
    static let screenshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/console-screenshots").path

    @Test("sign-in, wrong token, hostile body shown as text, dry run, CSRF-less POST, discard without note, replay, charts of a day, a provider page, the waiting lists, sign-out",
          .enabled(if: python != nil, "set PAYHOOK_BROWSER_TEST_PYTHON (ops/test does)"))
    func browser() async throws {
        let python = try #require(Self.python)
        try await ConsoleHarness.with("console_browser", roles: [.ingress, .processor]) { console in
            let database = console.database
            let psp = "PSP-BROWSER-\(UInt32.random(in: 0...UInt32.max))"
            let body = Bodies.adyen(Bodies.adyenItem(
                psp: psp, code: "AUTHORISATION", value: 1999, reference: "<script>window.payhookXSS=1</script>",
                extra: ["note": "<img src=x onerror=window.payhookXSS=2>"]))
            let xss = try await database.seedDeadInbound(provider: "adyen", error: "decoder said <script>window.payhookXSS=1</script>",
                                                         body: Array(body.utf8))
            let job = try await database.seedDeadJob()
            let (order, subscription) = try await Self.seedRecords(console)
            try await ConsoleHistory.seed(database)

            let (status, output) = try await HTTPTestClient.offPool {
                Result { try Self.run(python, [
                    Self.script, "--base", "http://127.0.0.1:\(console.adminPort)", "--token", TestSecrets.adminToken,
                    "--letter", String(xss.letter), "--job-letter", String(job.letter), "--psp", psp, "--order", String(order),
                    "--subscription", String(subscription), "--screenshots", Self.screenshots,
                ]) }
            }.get()
            #expect(status == 0, "\(output)")

            // Replayed once and processed once: one payment, one canonical event, one audit row.
            #expect(try await database.string("SELECT status AS v FROM inbound_events WHERE id = $1", [.int(xss.event)]) == "processed")
            #expect(try await database.int("SELECT count(*) AS n FROM payments WHERE provider_payment_id = $1", [.text(psp)]) == 1)
            #expect(try await database.int("""
                SELECT count(*) AS n FROM payment_events e JOIN payments p ON p.id = e.payment_id WHERE p.provider_payment_id = $1
                """, [.text(psp)]) == 1)
            #expect(try await database.string("SELECT status || '/' || resolved_by AS v FROM dead_letters WHERE id = $1", [.int(xss.letter)])
                    == "replayed/night-shift", "the credential signed in with resolves it; the typed name is a note")
            #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(job.letter)]) == "open")
            #expect(try await database.string("SELECT string_agg(actor || '(' || actor_note || '):' || action, ',') AS v FROM audit_log WHERE action LIKE 'dead_letter.%'")
                    == "night-shift(browser-test):dead_letter.replay")
        }
    }

    /// An order with a captured payment and a delivered callback, and a past-due subscription
    /// whose first cycle was declined twice: what the order and subscription pages show.
    static func seedRecords(_ console: ConsoleHarness) async throws -> (order: Int64, subscription: Int64) {
        let database = console.database
        let order: Int64 = try #require(try await database.query("""
            INSERT INTO orders (provider, merchant_reference, expected_amount_minor, expected_currency, registered_at,
                                fulfillment_status, fulfilled_at, callback_url)
            VALUES ('adyen', 'order-77', 1999, 'EUR', now() - interval '5 minutes', 'fulfilled', now(), 'https://merchant.example/hooks')
            RETURNING id
            """).rows.first?.decode("id"))
        try await database.query("""
            INSERT INTO payments (provider, provider_payment_id, order_id, merchant_reference, amount_minor, currency, status, method, funding)
            VALUES ('adyen', 'PSP-ORDER-77', $1, 'order-77', 1999, 'EUR', 'captured', 'mc', 'credit')
            """, [.int(order)])
        try await database.query("""
            INSERT INTO merchant_callbacks (webhook_id, fact_key, type, order_id, url, body, status, attempts, last_status_code, delivered_at)
            VALUES ('order.paid.' || $1 || '.0123456789abcdef', 'order.paid.' || $1, 'order.paid', $1, 'https://merchant.example/hooks', '{}', 'delivered', 2, 200, now())
            """, [.int(order)])
        let token: Int64 = try #require(try await database.query("""
            INSERT INTO vault_tokens (provider, token, shopper_reference, brand, last4, expiry)
            VALUES ('adyen', 'tok-browser-1', 'shopper-1', 'visa', '1111', '03/2030') RETURNING id
            """).rows.first?.decode("id"))
        let draft = NewSubscription(
            token: .id(token), amount: try Money(minorUnits: 990, currency: "EUR"),
            interval: try #require(SubscriptionInterval(every: 1, unit: .month)), startAt: Date(),
            reference: "plan-<b>gold</b>", maxCycles: 12, endAt: nil, actor: nil)
        let subscription = try await SubscriptionOperations(pool: console.server.pool).create(draft, by: OperatorAction(actor: "seed")).id
        try await database.query("UPDATE subscriptions SET status = 'past_due', status_reason = 'dunning exhausted' WHERE id = $1",
                                 [.int(subscription)])
        for (attempt, status, code) in [(1, "declined_soft", "51"), (2, "declined_hard", "05")] {
            try await database.query("""
                INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, status, decline_code,
                                     provider, attempted_at, settled_at, calls)
                VALUES ($1, 1, $2, $3, 990, 'EUR', $4, $5, 'adyen', now(), now(), 1)
                """, [.int(subscription), .int(Int64(attempt)), .text("phbrowser-sub-\(subscription)-c1-a\(attempt)"), .text(status), .text(code)])
        }
        return (order, subscription)
    }

    /// Runs `executable` to completion on the calling thread; returns its status and output.
    static func run(_ executable: String, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
