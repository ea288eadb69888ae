import Foundation
import PayhookPostgres
import Testing
@testable import PayhookApp
@testable import PayhookConsole
@testable import PayhookAdmin
@testable import PayhookSubscriptions

/// The overview's charts, the provider page and the "waiting on" lists, against a real schema.
extension ConsoleTests {
    @Test("the timeline counts a day of history into the right intervals, per provider and account; lag spikes where deliveries waited")
    func timelineIntervals() async throws {
        try await ConsoleHarness.with("console_timeline") { console in
            let now = Date()
            let start = try await ConsoleHistory.seed(console.database, now: now)
            // A delivery still pending in interval 4: that hour stays out of the rollup.
            let pending = try await console.database.int("""
                INSERT INTO inbound_events (provider, dedup_key, received_at, body, status)
                VALUES ('pxp', 'hist-pending', $1::timestamptz + interval '4 hours 30 minutes', '\\x7b7d', 'pending') RETURNING id AS n
                """, [.timestamptz(start)])
            let reads = ConsoleReads(pool: console.server.pool)
            // The maintenance ticker rolls up the closed hours; the pages only read.
            let rollUp = ConsoleRollUp(pool: console.server.pool, logger: .silent)
            try await rollUp.rollUp(now: now)
            let day = try await reads.timeline(.day, now: now)
            #expect(day.labels.count == 24)
            // The ticker rolls up the week; these count the day's hours.
            let rolled = try await console.database.int("SELECT count(*) AS n FROM console_rolled_hours WHERE hour >= $1", [.timestamptz(start)])
            #expect(rolled >= 21 && rolled <= 22, "the closed hours but the settling one are rolled up (\(rolled))")
            #expect(try await console.database.int("""
                SELECT count(*) AS n FROM console_rolled_hours WHERE hour = $1::timestamptz + interval '4 hours'
                """, [.timestamptz(start)]) == 0)
            #expect(day.deliveries["pxp"]?.accepted[4] == Double(4 + 4 % 3 + 1), "the pending delivery is counted from inbound_events")
            // Read again, now mostly from the rollup: the same figures. Then the pending one is
            // processed, its hour rolled, and it is still counted once.
            let again = try await reads.timeline(.day, now: now)
            for name in ["adyen", "pxp", "mercadopago"] {
                #expect(again.deliveries[name]?.accepted == day.deliveries[name]?.accepted, "\(name) accepted")
                #expect(again.deliveries[name]?.refused == day.deliveries[name]?.refused, "\(name) refused")
                #expect(again.lag[name]?.p50 == day.lag[name]?.p50 && again.lag[name]?.p99 == day.lag[name]?.p99, "\(name) lag")
            }
            try await console.database.query("""
                UPDATE inbound_events SET status = 'processed', processed_at = received_at + interval '2 seconds' WHERE id = $1
                """, [.int(pending)])
            try await rollUp.rollUp(now: now)
            let settled = try await reads.timeline(.day, now: now)
            #expect(try await console.database.int("SELECT count(*) AS n FROM console_rolled_hours WHERE hour >= $1", [.timestamptz(start)])
                    == rolled + 1)
            #expect(settled.deliveries["pxp"]?.accepted == day.deliveries["pxp"]?.accepted)
            let adyen = try #require(day.deliveries["adyen"])
            for h in ConsoleHistory.hours {
                #expect(adyen.accepted[h] == Double(ConsoleHistory.acceptedAdyen(h)), "accepted in interval \(h)")
                #expect(adyen.refused[h] == Double(ConsoleHistory.refusedAdyen(h)), "refused in interval \(h)")
                #expect(day.lettersOpened[h] == Double(ConsoleHistory.lettersOpened(h) + (ConsoleHistory.reviewIntervals.contains(h) ? 1 : 0)),
                        "letters opened in interval \(h)")
                #expect(day.lettersResolved[h] == Double(ConsoleHistory.lettersResolved(h)), "letters resolved in interval \(h)")
                #expect(day.fulfilled[h] == Double(ConsoleHistory.fulfilled(h)), "fulfilled in interval \(h)")
                #expect(day.reviews[h] == (ConsoleHistory.reviewIntervals.contains(h) ? 1 : 0), "reviews in interval \(h)")
            }
            #expect(adyen.accepted[23] == 0 && adyen.refused[23] == 0, "the current hour holds nothing seeded")
            #expect(day.accounts["adyen"] == ["", "eu"])
            let lag = try #require(day.lag["adyen"])
            #expect((lag.p50[15] ?? 0) >= 15 && (lag.p99[3] ?? 99) < 1, "the spike shows in 14–16 only")
            // The histogram's percentiles stay within 10 % of the lag of the delivery at that rank.
            for (h, p) in [(15, 0.5), (15, 0.99), (3, 0.5), (17, 0.99)] {
                let exact = try #require(try await console.database.query("""
                    SELECT percentile_disc($3::float8) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at))::float8 AS v
                    FROM inbound_events WHERE provider = 'adyen' AND received_at >= $1::timestamptz + make_interval(hours => $2::int)
                      AND received_at < $1::timestamptz + make_interval(hours => $2::int + 1)
                    """, [.timestamptz(day.start), .int(Int64(h)), .double(p)]).rows.first?.decode("v", as: Double.self))
                let shown = try #require(p == 0.5 ? lag.p50[h] : lag.p99[h])
                #expect(abs(shown - exact) <= 0.1 * exact, "p\(Int(p * 100)) of interval \(h): \(shown) s shown, \(exact) s exact")
            }
            #expect(lag.p50[23] == nil, "an interval with no processed delivery has no lag, not zero")
            #expect(day.charges.values.reduce(0) { $0 + $1.reduce(0, +) } == Double(try await console.database.int("""
                SELECT count(*) AS n FROM charges WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '6 days'
                """)), "charges by day cover the last seven UTC days")

            // One account of one provider: only its deliveries; the provider-wide letters still show.
            let eu = try await reads.timeline(.day, provider: "adyen", account: "eu", now: now)
            #expect(eu.deliveries.keys.sorted() == ["adyen"])
            #expect(eu.deliveries["adyen"]?.accepted[17] == Double((1...ConsoleHistory.acceptedAdyen(17)).filter { $0 % 3 == 0 }.count))
            #expect(eu.deliveries["adyen"]?.refused.reduce(0, +) == 0, "refusals were all on the default account")
            #expect(eu.fulfilled.reduce(0, +) == 0)

            // A week: 28 six-hour intervals holding the same deliveries.
            let week = try await reads.timeline(.week, now: now)
            #expect(week.labels.count == 28)
            #expect(week.deliveries["adyen"]?.accepted.reduce(0, +) == adyen.accepted.reduce(0, +))
        }
    }

    @Test("the charts only read: before the ticker rolls an hour up they count it from inbound_events, after it the same from the rollup")
    func chartsOnlyRead() async throws {
        try await ConsoleHarness.with("console_read_only") { console in
            let now = Date()
            try await ConsoleHistory.seed(console.database, now: now)
            let reads = ConsoleReads(pool: console.server.pool)
            let (cookie, _) = try await console.signIn()
            for path in ["/console", "/console?window=7d", "/console/providers/adyen", "/console/providers/adyen?window=7d"] {
                #expect(try await console.send("GET", path, cookie: cookie).status == 200)
            }
            let raw = try await reads.timeline(.day, now: now)
            let rawWeek = try await reads.timeline(.week, now: now)
            #expect(try await console.database.int("SELECT count(*) AS n FROM console_rolled_hours") == 0, "a GET rolled hours up")
            #expect(try await console.database.int("SELECT count(*) AS n FROM console_delivery_hours") == 0)
            #expect(raw.deliveries["adyen"]?.accepted[3] == Double(ConsoleHistory.acceptedAdyen(3)))

            try await ConsoleRollUp(pool: console.server.pool, logger: .silent).rollUp(now: now)
            #expect(try await console.database.int("SELECT count(*) AS n FROM console_rolled_hours") > 20)
            let rolled = try await reads.timeline(.day, now: now)
            let rolledWeek = try await reads.timeline(.week, now: now)
            for name in ["adyen", "pxp", "mercadopago"] {
                #expect(rolled.deliveries[name]?.accepted == raw.deliveries[name]?.accepted, "\(name) accepted")
                #expect(rolledWeek.deliveries[name]?.accepted == rawWeek.deliveries[name]?.accepted, "\(name) accepted, week")
                #expect(rolled.lag[name]?.p50 == raw.lag[name]?.p50 && rolled.lag[name]?.p99 == raw.lag[name]?.p99, "\(name) lag")
            }
        }
    }

    @Test("the window is a closed set: 1h, 24h, 7d; anything else is a 400 that does not echo markup")
    func windowParameter() async throws {
        #expect(try ConsoleWindow.parse(nil) == .day)
        #expect(try ConsoleWindow.parse("1h") == .hour)
        #expect(throws: OperationsError.self) { try ConsoleWindow.parse("30d") }
        try await ConsoleHarness.with("console_window") { console in
            let (cookie, _) = try await console.signIn()
            let week = try await console.send("GET", "/console?window=7d", cookie: cookie)
            #expect(week.status == 200)
            #expect(week.text.contains("aria-current=\"page\" href=\"/console?window=7d\">last 7 days</a>"))
            let hostile = try await console.send("GET", "/console?window=\(ConsolePages.urlEncode("<script>x()</script>"))", cookie: cookie)
            #expect(hostile.status == 400)
            #expect(hostile.text.contains("window must be 1h, 24h or 7d"))
            #expect(!hostile.text.contains("<script>x()"))
            let provider = try await console.send("GET", "/console/providers/adyen?window=2h", cookie: cookie)
            #expect(provider.status == 400)
            #expect(try await console.send("GET", "/console/providers/stripe", cookie: cookie).status == 404)
        }
    }

    @Test("new pages escape what webhooks and merchants control, carry the CSP, and need a session")
    func newPagesEscape() async throws {
        try await ConsoleHarness.with("console_new_pages") { console in
            let database = console.database
            try await ConsoleHistory.seed(database)
            let hostile = "<script>window.x=1</script>"
            let escaped = "&lt;script&gt;window.x=1&lt;/script&gt;"
            try await database.query("""
                INSERT INTO inbound_events (provider, account, dedup_key, event_type, body) VALUES ('adyen', $1, $1, $1, '\\x7b7d')
                """, [.text(hostile)])
            try await database.query("""
                INSERT INTO rejected_deliveries (provider, account, reason, remote_addr, body_size, body) VALUES ('adyen', $1, $1, $1, 2, '\\x7b7d')
                """, [.text(hostile)])
            try await database.query("UPDATE orders SET review_reason = $1 WHERE fulfillment_status = 'needs_review'", [.text(hostile)])
            try await database.query("UPDATE merchant_callbacks SET url = $1, last_error = $1, last_status_code = NULL WHERE status = 'pending'",
                                     [.text(hostile)])
            try await database.query("UPDATE charges SET last_error = $1, idempotency_key = idempotency_key || $1 WHERE status = 'unknown'",
                                     [.text(hostile)])
            try await database.query("UPDATE dead_letters SET reason = $1 WHERE status = 'open' AND source_id = 900000 + 21 * 100 + 1",
                                     [.text(hostile)])
            try await database.query("UPDATE sweep_checks SET reason = $1", [.text(hostile)])
            try await database.query("UPDATE orders SET waiting_for = $1 WHERE waiting_for IS NOT NULL", [.text(hostile)])
            let (cookie, _) = try await console.signIn()
            let pages = ["/console", "/console?window=1h", "/console/providers/adyen",
                         "/console/providers/adyen?account=\(ConsolePages.urlEncode(hostile))",
                         "/console/waiting", "/console/waiting/provider", "/console/waiting/merchant", "/console/waiting/human"]
            for path in pages {
                let page = try await console.send("GET", path, cookie: cookie)
                #expect(page.status == 200, "\(path)")
                #expect(page.headers["content-security-policy"] == OnCallConsole.contentSecurityPolicy, "\(path)")
                #expect(!page.text.contains(hostile), "\(path) shows a hostile string as markup")
                #expect(page.text.contains(escaped) || path == "/console?window=1h", "\(path) shows the hostile string as text")
                #expect(!page.text.contains("<script>window"), "\(path)")
                let anonymous = try await console.send("GET", path)
                #expect(anonymous.status != 200 || anonymous.text.contains("name=\"token\""), "\(path) opened without a session")
            }
            let human = try await console.send("GET", "/console/waiting/human", cookie: cookie).text
            #expect(human.components(separatedBy: "action=\"/console/dead-letters/").count - 1 == 2, "each order in review offers its re-check")
            #expect(human.contains("action=\"/console/charges/"), "the unknown charge offers charges resolve")
            let merchant = try await console.send("GET", "/console/waiting/merchant", cookie: cookie).text
            #expect(merchant.contains("https://legacy.example/callback") && merchant.contains("connection refused"))
            #expect(merchant.contains("retry <time"), "the next attempt is shown")
            let letter = try await database.int("""
                SELECT d.id AS n FROM dead_letters d JOIN jobs j ON j.id = d.source_id
                WHERE d.source = 'job' AND j.kind = 'merchant_callback' AND d.status = 'open'
                """)
            #expect(merchant.contains("<a href=\"/console/dead-letters/\(letter)\">replay dead letter \(letter)</a>"),
                    "a callback given up links to the letter whose replay sends it again")
        }
    }

    @Test("charges resolve from the human list: no CSRF token is 403, no note is refused, a note settles it audited as the operator")
    func chargeResolveForm() async throws {
        try await ConsoleHarness.with("console_charge_resolve") { console in
            let database = console.database
            try await ConsoleHistory.seed(database)
            let charge = try await database.int("SELECT id AS n FROM charges WHERE status = 'unknown'")
            let (cookie, csrf) = try await console.signIn(name: "dora")
            let path = "/console/charges/\(charge)/resolve"
            let forged = try await console.send("POST", path, cookie: cookie, form: [("as", "failed"), ("note", "forged")])
            #expect(forged.status == 403)
            let noNote = try await console.send("POST", path, cookie: cookie, form: [("csrf", csrf), ("as", "failed"), ("note", " ")])
            #expect(noNote.status == 303)
            #expect(try await console.send("GET", "/console/waiting/human", cookie: cookie).text.contains("Resolve refused"))
            #expect(try await database.string("SELECT status AS v FROM charges WHERE id = $1", [.int(charge)]) == "unknown")
            let noPayment = try await console.send("POST", path, cookie: cookie, form: [("csrf", csrf), ("as", "succeeded"), ("note", "paid")])
            #expect(noPayment.status == 303)
            #expect(try await database.string("SELECT status AS v FROM charges WHERE id = $1", [.int(charge)]) == "unknown")

            let resolved = try await console.send("POST", path, cookie: cookie,
                                                  form: [("csrf", csrf), ("as", "failed"), ("note", "not in the adyen dashboard")])
            #expect(resolved.status == 303 && resolved.headers["location"] == "/console/waiting/human")
            #expect(try await database.string("SELECT status AS v FROM charges WHERE id = $1", [.int(charge)]) == "declined_soft")
            #expect(try await database.string("""
                SELECT actor || '(' || actor_note || '):' || action || ':' || (details->>'via') AS v FROM audit_log WHERE target = $1
                """, [.text("charge:\(charge)")]) == "night-shift(dora):charge.resolve:console", "the credential is the actor, the typed name a note")
            let after = try await console.send("GET", "/console/waiting/human", cookie: cookie).text
            #expect(after.contains("Charge \(charge): charge \(charge) failed"))
            #expect(!after.contains("action=\"/console/charges/\(charge)/resolve\""), "a settled charge leaves the list")
        }
    }
}
