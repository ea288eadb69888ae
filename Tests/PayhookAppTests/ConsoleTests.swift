import Foundation
import Synchronization
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

/// An in-process `payhook serve` whose admin listener serves the console; `roles` as `--roles`.
struct ConsoleHarness: Sendable {
    let database: TestDatabase
    let server: PayhookServer
    var adminPort: Int { server.adminPort }

    static func with(_ label: String, roles: Set<ServeRole> = [.ingress], _ body: (ConsoleHarness) async throws -> Void) async throws {
        var environment = TestSecrets.environment
        environment["PAYHOOK_ADMIN_ACTOR"] = "night-shift"
        let configuration = try Configuration.parse(environment: environment) { _ in throw CocoaError(.fileNoSuchFile) }
        let database = try await TestDatabase.migrated(label)
        let server = try PayhookServer(configuration: configuration, databaseURL: database.url, logger: .silent, roles: roles)
        let shutdown = Latch()
        let running = Task { try await server.run(until: { await shutdown.wait() }) }
        do {
            try #require(await eventually(timeout: .seconds(10)) { server.adminPort != 0 }, "server did not start listening")
            try await body(ConsoleHarness(database: database, server: server))
        } catch {
            shutdown.open()
            _ = try? await running.value
            throw error
        }
        shutdown.open()
        try await running.value
    }

    func send(_ method: String, _ path: String, cookie: String? = nil, form: [(String, String)]? = nil,
              headers: [(String, String)] = []) async throws -> HTTPTestResponse {
        var all = headers
        if let cookie { all.append(("Cookie", cookie)) }
        var body: [UInt8] = []
        if let form {
            all.append(("Content-Type", "application/x-www-form-urlencoded"))
            body = Array(form.map { "\($0.0)=\(ConsolePages.urlEncode($0.1))" }.joined(separator: "&").utf8)
        }
        return try #require(await HTTPTestClient.send(port: adminPort, method: method, path: path, headers: all, body: body))
    }

    /// Signs in as a browser would: the form's CSRF value and cookie, then the token.
    /// Returns the session cookie (`name=value`) and the session's CSRF token.
    func signIn(token: String = TestSecrets.adminToken, name: String = "") async throws -> (cookie: String, csrf: String) {
        let form = try await send("GET", "/console")
        let signInCookie = try #require(form.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let csrf = try #require(Self.hiddenCSRF(form.text))
        let answer = try await send("POST", "/console/sign-in", cookie: signInCookie,
                                    form: [("csrf", csrf), ("token", token), ("name", name)])
        try #require(answer.status == 303, "sign-in answered \(answer.status)")
        let cookie = try #require(answer.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let overview = try await send("GET", "/console", cookie: cookie)
        return (cookie, try #require(Self.hiddenCSRF(overview.text)))
    }

    static func hiddenCSRF(_ html: String) -> String? {
        guard let range = html.range(of: "name=\"csrf\" value=\"") else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }
}

@Suite("On-call console", .timeLimit(.minutes(5)))
struct ConsoleTests {
    @Test("interpolated strings are escaped; markup built from HTML values is not")
    func escaping() {
        let hostile = #"<script>alert(1)</script><img src=x onerror="x()"> & 'q'"#
        let html: HTML = "<td title=\"\(hostile)\">\(hostile)</td>"
        #expect(html.rendered == "<td title=\"&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;x()&quot;&gt; &amp; &#39;q&#39;\">"
                + "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;x()&quot;&gt; &amp; &#39;q&#39;</td>")
        #expect(HTML.prettyJSON(#"{"a":"</pre><script>x</script>","n":[1,2]}"#).rendered
                == "<pre class=\"json\">{\n  &quot;a&quot;: &quot;&lt;/pre&gt;&lt;script&gt;x&lt;/script&gt;&quot;,\n  &quot;n&quot;: [\n    1,\n    2\n  ]\n}</pre>")
    }

    @Test("sign-in: a wrong token starts nothing; the right one sets an HttpOnly SameSite=Strict cookie; sign-out ends it")
    func signInAndOut() async throws {
        try await ConsoleHarness.with("console_signin") { console in
            let form = try await console.send("GET", "/console")
            #expect(form.status == 200)
            #expect(form.text.contains("type=\"password\" name=\"token\""))
            let signInCookie = try #require(form.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
            let csrf = try #require(ConsoleHarness.hiddenCSRF(form.text))

            let wrong = try await console.send("POST", "/console/sign-in", cookie: signInCookie,
                                               form: [("csrf", csrf), ("token", "nope")])
            #expect(wrong.status == 401)
            #expect(wrong.text.contains("not the admin token"))
            #expect(wrong.headers["set-cookie"]?.hasPrefix("payhook_console=") != true)

            let forged = try await console.send("POST", "/console/sign-in", form: [("csrf", csrf), ("token", TestSecrets.adminToken)])
            #expect(forged.status == 403, "a sign-in without the form's cookie is refused")

            let right = try await console.send("POST", "/console/sign-in", cookie: signInCookie,
                                               form: [("csrf", csrf), ("token", TestSecrets.adminToken)])
            #expect(right.status == 303)
            let setCookie = try #require(right.headers["set-cookie"])
            #expect(setCookie.hasPrefix("payhook_console="))
            for attribute in ["HttpOnly", "SameSite=Strict", "Max-Age=28800", "Path=/console"] {
                #expect(setCookie.contains(attribute))
            }
            #expect(!setCookie.contains("Secure"))
            let cookie = String(setCookie.split(separator: ";")[0])
            let overview = try await console.send("GET", "/console", cookie: cookie)
            #expect(overview.text.contains("<h1>Overview</h1>"))
            #expect(overview.text.contains("signed in as night-shift"), "PAYHOOK_ADMIN_ACTOR names an operator who gave no name")

            let session = try #require(ConsoleHarness.hiddenCSRF(overview.text))
            #expect(try await console.send("POST", "/console/sign-out", cookie: cookie, form: [("csrf", session)]).status == 303)
            let after = try await console.send("GET", "/console/dead-letters", cookie: cookie)
            #expect(after.status == 303 && after.headers["location"] == "/console")
            // The wrong token and the forged form started nothing, so only these are on record.
            #expect(try await console.database.string("""
                SELECT string_agg(action || ':' || actor, ',' ORDER BY id) AS v FROM audit_log WHERE target = 'console'
                """) == "console.sign_in:night-shift,console.sign_out:night-shift")

            let proxied = try await console.send("GET", "/console", headers: [("X-Forwarded-Proto", "https")])
            #expect(proxied.headers["set-cookie"]?.contains("; Secure") == true, "behind a TLS proxy cookies are Secure")
        }
    }

    @Test("every console response carries the CSP; the bearer-token API is unchanged beside it")
    func securityHeaders() async throws {
        try await ConsoleHarness.with("console_csp") { console in
            for path in ["/console", "/console/console.css", "/console/console.js", "/console/icon.svg", "/console/dead-letters", "/console/nothing"] {
                let response = try await console.send("GET", path)
                #expect(response.headers["content-security-policy"] == OnCallConsole.contentSecurityPolicy, "\(path)")
                #expect(response.headers["x-content-type-options"] == "nosniff", "\(path)")
            }
            #expect(OnCallConsole.contentSecurityPolicy.contains("script-src 'self'"))
            #expect(!OnCallConsole.contentSecurityPolicy.contains("unsafe-inline"))
            #expect(try await console.send("GET", "/v1/dead-letters").status == 401)
        }
    }

    @Test("dead letters: a POST without the CSRF token is 403 and changes nothing; replay and discard need a note and are audited as the operator")
    func letterActions() async throws {
        try await ConsoleHarness.with("console_actions") { console in
            let database = console.database
            let inbound = try await database.seedDeadInbound(error: "boom <script>x()</script>")
            let job = try await database.seedDeadJob()
            let (cookie, csrf) = try await console.signIn(name: "alice")

            let page = try await console.send("GET", "/console/dead-letters/\(inbound.letter)", cookie: cookie)
            #expect(page.text.contains("boom &lt;script&gt;x()&lt;/script&gt;"))
            #expect(!page.text.contains("<script>x()"))

            let forged = try await console.send("POST", "/console/dead-letters/\(inbound.letter)/replay", cookie: cookie,
                                                form: [("note", "forged")])
            #expect(forged.status == 403)
            let wrongToken = try await console.send("POST", "/console/dead-letters/\(inbound.letter)/replay", cookie: cookie,
                                                    form: [("csrf", String(csrf.reversed())), ("note", "forged")])
            #expect(wrongToken.status == 403)
            #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(inbound.letter)]) == "open")

            _ = try await console.send("POST", "/console/dead-letters/\(inbound.letter)/dry-run", cookie: cookie, form: [("csrf", csrf)])
            let dryRun = try await console.send("GET", "/console/dead-letters/\(inbound.letter)", cookie: cookie)
            #expect(dryRun.text.contains("Dry run, nothing changed"))
            _ = try await console.send("POST", "/console/dead-letters/\(inbound.letter)/replay", cookie: cookie, form: [("csrf", csrf)])
            _ = try await console.send("POST", "/console/dead-letters/\(job.letter)/discard", cookie: cookie, form: [("csrf", csrf), ("note", " ")])
            let refused = try await console.send("GET", "/console/dead-letters/\(job.letter)", cookie: cookie)
            #expect(refused.text.contains("Discard refused"))
            #expect(try await database.int("SELECT count(*) AS n FROM dead_letters WHERE status = 'open'") == 2)
            #expect(try await database.int("SELECT count(*) AS n FROM audit_log WHERE target <> 'console'") == 0)

            let replay = try await console.send("POST", "/console/dead-letters/\(inbound.letter)/replay", cookie: cookie,
                                                form: [("csrf", csrf), ("note", "provider back")])
            #expect(replay.status == 303)
            let discard = try await console.send("POST", "/console/dead-letters/\(job.letter)/discard", cookie: cookie,
                                                 form: [("csrf", csrf), ("note", "refunded by hand")])
            #expect(discard.status == 303)
            #expect(try await database.string("SELECT status || '/' || attempts AS v FROM inbound_events WHERE id = $1", [.int(inbound.event)])
                    == "pending/0")
            #expect(try await database.string("SELECT string_agg(actor || '(' || actor_note || '):' || action || ':' || (details->>'via'), ',' ORDER BY id) AS v FROM audit_log WHERE target <> 'console'")
                    == "night-shift(alice):dead_letter.replay:console,night-shift(alice):dead_letter.discard:console",
                    "the credential is the actor, the typed name a note")
            let shown = try await console.send("GET", "/console/dead-letters/\(inbound.letter)", cookie: cookie)
            #expect(shown.text.contains("provider back"), "the audit trail is on the letter's page")
        }
    }

    @Test("the list pages by id with no cap; a bulk replay of a filter replays exactly the matching open letters, each audited")
    func listPagingAndBulkReplay() async throws {
        try await ConsoleHarness.with("console_list") { console in
            let database = console.database
            for _ in 0..<55 { try await database.seedDeadInbound(provider: "pxp", reason: "provider_timeout") }
            let other = try await database.seedDeadInbound(provider: "adyen", reason: "decode_failed")
            let (cookie, csrf) = try await console.signIn()

            let first = try await console.send("GET", "/console/dead-letters?provider=pxp", cookie: cookie)
            #expect(first.text.contains("55 letter(s) match"))
            #expect(first.text.components(separatedBy: "name=\"id\" value=").count - 1 == 50)
            let next = try #require(first.text.range(of: "before=").map { String(first.text[$0.upperBound...].prefix { $0.isNumber }) })
            let second = try await console.send("GET", "/console/dead-letters?provider=pxp&before=\(next)", cookie: cookie)
            #expect(second.text.components(separatedBy: "name=\"id\" value=").count - 1 == 5)
            #expect(!second.text.contains("Older →"))

            // Two ticked rows first: exactly those.
            let ticked = first.text.components(separatedBy: "name=\"id\" value=\"").dropFirst().prefix(2).map { String($0.prefix { $0.isNumber }) }
            let selected = try await console.send("POST", "/console/dead-letters/replay", cookie: cookie,
                                                  form: [("csrf", csrf), ("scope", "selected"), ("note", "two first")] + ticked.map { ("id", $0) })
            #expect(selected.status == 303)
            // One bulk replay runs at a time: the next starts once the page says this one finished.
            #expect(await eventually(timeout: .seconds(30)) {
                (try? await console.send("GET", "/console/dead-letters", cookie: cookie))?.text.contains("finished: 2 of 2 done") == true
            })
            #expect(try await database.int("SELECT count(*) AS n FROM dead_letters WHERE status = 'replayed' AND id::text = ANY($1::text[])",
                                           [.text("{\(ticked.joined(separator: ","))}")]) == 2)

            // Then everything matching the filter: the other 53.
            let response = try await console.send("POST", "/console/dead-letters/replay", cookie: cookie,
                                                  form: [("csrf", csrf), ("scope", "all"), ("provider", "pxp"), ("status", "open"),
                                                         ("note", "timeouts fixed"), ("rate", "50")])
            #expect(response.status == 303)
            let done = await eventually(timeout: .seconds(30)) {
                (try? await database.int("SELECT count(*) AS n FROM dead_letters WHERE status = 'replayed'")) == 55
            }
            #expect(done)
            #expect(try await database.int("SELECT count(*) AS n FROM audit_log WHERE action = 'dead_letter.replay'") == 55)
            #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(other.letter)]) == "open")
        }
    }

    @Test("subscription pause, resume and cancel follow the API's rules and audit as the operator")
    func subscriptionActions() async throws {
        try await ConsoleHarness.with("console_subscriptions") { console in
            let database = console.database
            let token: Int64 = try #require(try await database.query("""
                INSERT INTO vault_tokens (provider, token, brand, last4) VALUES ('adyen', 'tok-console', 'visa', '1111') RETURNING id
                """).rows.first?.decode("id"))
            let draft = NewSubscription(
                token: .id(token), amount: try Money(minorUnits: 500, currency: "EUR"),
                interval: try #require(SubscriptionInterval(every: 1, unit: .month)), startAt: Date(),
                reference: "console-sub", maxCycles: nil, endAt: nil, actor: nil)
            let id = try await SubscriptionOperations(pool: console.server.pool).create(draft, by: OperatorAction(actor: "seed")).id
            let (cookie, csrf) = try await console.signIn(name: "carol")
            func act(_ verb: String) async throws -> String {
                let answer = try await console.send("POST", "/console/subscriptions/\(id)/\(verb)", cookie: cookie,
                                                    form: [("csrf", csrf), ("note", "asked by support")])
                #expect(answer.status == 303)
                return try await console.send("GET", "/console/subscriptions/\(id)", cookie: cookie).text
            }
            let paused = try await act("pause")
            #expect(paused.contains("Subscription \(id) is now paused."))
            #expect(paused.contains("<dd>every month</dd>"), "the interval reads as words, not the stored JSON")
            #expect(try await act("cancel").contains("Subscription \(id) is now canceled."))
            #expect(try await act("resume").contains("Resume refused: subscription \(id) is canceled and cannot be resumed"))
            #expect(try await database.string("SELECT status AS v FROM subscriptions WHERE id = $1", [.int(id)]) == "canceled")
            #expect(try await database.string("""
                SELECT string_agg(actor || '(' || actor_note || '):' || action || ':' || (details->>'via'), ',' ORDER BY id) AS v FROM audit_log
                WHERE actor_note = 'carol' AND target <> 'console'
                """) == "night-shift(carol):subscription.pause:console,night-shift(carol):subscription.cancel:console")
            #expect(try await console.send("POST", "/console/subscriptions/\(id)/resume", cookie: cookie, form: []).status == 403)
        }
    }

    @Test("search finds a delivery by dedup key and a payment by provider id, each with its journey")
    func search() async throws {
        try await ConsoleHarness.with("console_search") { console in
            let database = console.database
            let event: Int64 = try #require(try await database.query("""
                INSERT INTO inbound_events (provider, dedup_key, body, status, attempts, processed_at)
                VALUES ('adyen', 'dedup-<b>1</b>', '\\x7b7d', 'processed', 1, now()) RETURNING id
                """).rows.first?.decode("id"))
            let payment: Int64 = try #require(try await database.query("""
                INSERT INTO payments (provider, provider_payment_id, merchant_reference, amount_minor, currency, status)
                VALUES ('adyen', 'PSP-SEARCH-1', 'order-<i>9</i>', 1999, 'EUR', 'captured') RETURNING id
                """).rows.first?.decode("id"))
            try await database.query("""
                INSERT INTO payment_events (payment_id, inbound_event_id, type, occurred_at) VALUES ($1, $2, 'payment.captured', now())
                """, [.int(payment), .int(event)])
            let (cookie, _) = try await console.signIn()

            let byKey = try await console.send("GET", "/console/search?q=\(ConsolePages.urlEncode("dedup-<b>1</b>"))", cookie: cookie)
            #expect(byKey.text.contains("Delivery \(event) (adyen)"))
            #expect(byKey.text.contains("dedup-&lt;b&gt;1&lt;/b&gt;"))
            #expect(byKey.text.contains("payment \(payment): adyen PSP-SEARCH-1"), "a delivery's journey goes on to the payments it changed")
            #expect(byKey.text.components(separatedBy: "<span class=\"stage\">received</span>").count - 1 == 1, "its own steps once")

            let byPayment = try await console.send("GET", "/console/search?q=PSP-SEARCH-1", cookie: cookie)
            #expect(byPayment.text.contains("Payment \(payment)"))
            let stages = byPayment.text.components(separatedBy: "<span class=\"stage\">").dropFirst().map { String($0.prefix { $0 != "<" }) }
            #expect(Array(stages.prefix(4)) == ["received", "verified", "processed", "payment"])
            #expect(byPayment.text.contains("19.99 EUR"))
            #expect(byPayment.text.contains("order-&lt;i&gt;9&lt;/i&gt;"))
        }
    }

    @Test("a delivery's journey shows its dead letter and who replayed it; a job's, who discarded it")
    func searchShowsDeadLetters() async throws {
        try await ConsoleHarness.with("console_search_dead") { console in
            let database = console.database
            let inbound = try await database.seedDeadInbound(reason: "max_attempts_exceeded", error: "pxp fetch: timeout")
            let key = try #require(try await database.string("SELECT dedup_key AS v FROM inbound_events WHERE id = $1", [.int(inbound.event)]))
            let (cookie, csrf) = try await console.signIn(name: "alice")

            let dead = try await console.send("GET", "/console/search?q=\(ConsolePages.urlEncode(key))", cookie: cookie)
            #expect(dead.text.contains("dead letter \(inbound.letter) opened (max_attempts_exceeded): pxp fetch: timeout"))
            #expect(dead.text.contains("/console/dead-letters/\(inbound.letter)"), "the step links to the letter")

            _ = try await console.send("POST", "/console/dead-letters/\(inbound.letter)/replay", cookie: cookie,
                                       form: [("csrf", csrf), ("note", "provider back")])
            let replayed = try await console.send("GET", "/console/search?q=\(ConsolePages.urlEncode(key))", cookie: cookie)
            #expect(replayed.text.contains("dead letter \(inbound.letter) replayed by night-shift: provider back"),
                    "the credential signed in with resolved it (the typed name is in the audit log's note)")

            // A charge's job that dead-lettered and was discarded shows on the charge's journey.
            let job: Int64 = try await database.int("""
                INSERT INTO jobs (kind, payload, state, attempt, max_attempts, unique_key, finalized_at)
                VALUES ('charge_recurring', '{}', 'discarded', 5, 5, 'search-dead-key', now()) RETURNING id AS n
                """)
            let letter: Int64 = try await database.int("""
                INSERT INTO dead_letters (source, source_id, reason, error, status, resolved_at, resolved_by, note)
                VALUES ('job', $1, 'max_attempts_exceeded', 'HTTP 503', 'discarded', now(), 'bob', 'charged by hand')
                RETURNING id AS n
                """, [.int(job)])
            let pool = PostgresPool(conninfo: database.url, maxConnections: 1)
            let jobSteps = try await pool.withConnection { connection in
                try await ConsoleReads.deadLetterSteps(inboundEvents: [], jobs: [job], on: connection)
            }
            await pool.close()
            #expect(jobSteps.map(\.summary) == [
                "dead letter \(letter) opened (max_attempts_exceeded): HTTP 503",
                "dead letter \(letter) discarded by bob: charged by hand",
            ])
        }
    }
}

@Suite("Console sessions")
struct ConsoleSessionTests {
    final class Clock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test("a session ends at its lifetime and on sign-out; ids and CSRF tokens are distinct random hex")
    func lifetime() {
        let clock = Clock()
        let sessions = ConsoleSessions(now: { clock.now.withLock { $0 } })
        let first = sessions.start(actor: "alice", credential: AdminCredential(name: "alice", scope: .operator, token: "t1"))
        let second = sessions.start(actor: "bob", credential: AdminCredential(name: "bob", scope: .operator, token: "t2"))
        #expect(first.id.count == 64 && first.csrfToken.count == 64)
        #expect(Set([first.id, first.csrfToken, second.id, second.csrfToken]).count == 4)
        #expect(ConsoleSessions.csrfMatches(first, first.csrfToken))
        #expect(!ConsoleSessions.csrfMatches(first, second.csrfToken))
        #expect(!ConsoleSessions.csrfMatches(first, ""))

        clock.now.withLock { $0 += ConsoleSessions.lifetime - 1 }
        #expect(sessions.session(first.id)?.actor == "alice")
        sessions.end(second.id)
        #expect(sessions.session(second.id) == nil)
        clock.now.withLock { $0 += 1 }
        #expect(sessions.session(first.id) == nil)
    }
}
