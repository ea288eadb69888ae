import Foundation
import PayhookCore
import PayhookHTTP

extension ConsolePages {
    /// Where the delivery charts' figures come from, and what the refusals leave out.
    static let deliveryNote: HTML = """
        <p class="note">Accepted: deliveries stored in <code>inbound_events</code>. Duplicate: a delivery stored before and
        sent again, acknowledged and stored once; ingress counts them per five minutes as it answers. Refused: those
        recorded in <code>rejected_deliveries</code>, within a quota per address; <code>payhook_deliveries_rejected_total</code>
        on <code>/metrics</code> counts every one.</p>
        """

    /// The 1 h / 24 h / 7 d switch; `base` is the page's path (with its own query, if any).
    static func windowSwitch(_ current: ConsoleWindow, base: String) -> HTML {
        let separator = base.contains("?") ? "&" : "?"
        let links = ConsoleWindow.allCases.map { window -> HTML in
            window == current
                ? "<a class=\"current\" aria-current=\"page\" href=\"\(base)\(separator)window=\(window.rawValue)\">\(window.title)</a>"
                : "<a href=\"\(base)\(separator)window=\(window.rawValue)\">\(window.title)</a>"
        }
        return "<nav class=\"windows\" aria-label=\"Time window\"><span class=\"muted\">Show:</span>\(HTML.join(links, separator: " · "))</nav>"
    }

    static func deliveriesChart(_ timeline: ConsoleReads.Timeline, provider: String) -> ConsoleChart {
        let series = timeline.deliveries[provider]
        let empty = Array(repeating: 0.0, count: timeline.labels.count)
        return ConsoleChart(title: "Deliveries", kind: .stackedBars, unit: "deliveries \(timeline.window.perInterval)",
                            labels: timeline.labels,
                            series: [.init(name: "accepted (stored)", values: series?.accepted ?? empty),
                                     .init(name: "duplicate (acknowledged, stored once)", values: series?.duplicate ?? empty),
                                     .init(name: "refused (recorded)", values: series?.refused ?? empty)],
                            emptyText: "No delivery received or refused in the \(timeline.window.title).")
    }

    static func lagChart(_ timeline: ConsoleReads.Timeline, provider: String) -> ConsoleChart {
        let series = timeline.lag[provider]
        let none = [Double?](repeating: nil, count: timeline.labels.count)
        return ConsoleChart(title: "Processing lag", kind: .lines, unit: "received → processed",
                            labels: timeline.labels,
                            series: [.init(name: "p50", values: series?.p50 ?? none), .init(name: "p99", values: series?.p99 ?? none)],
                            format: .seconds, emptyText: "No delivery received in the \(timeline.window.title) has been processed.")
    }

    /// Dead letters, fulfillments and reviews, and charges: the charts every provider shares
    /// on the overview and that a provider's page narrows.
    static func outcomeCharts(_ timeline: ConsoleReads.Timeline, accountNote: Bool) -> HTML {
        let letters = ConsoleChart(title: "Dead letters", kind: .groupedBars, unit: "letters \(timeline.window.perInterval)",
                                   labels: timeline.labels,
                                   series: [.init(name: "opened", values: timeline.lettersOpened),
                                            .init(name: "resolved (replayed or discarded)", values: timeline.lettersResolved)],
                                   emptyText: "No dead letter opened or resolved in the \(timeline.window.title).")
        let fulfillment = ConsoleChart(title: "Fulfillment", kind: .stackedBars, unit: "orders \(timeline.window.perInterval)",
                                       labels: timeline.labels,
                                       series: [.init(name: "fulfilled", values: timeline.fulfilled),
                                                .init(name: "sent to review", values: timeline.reviews)],
                                       emptyText: "No order fulfilled or sent to review in the \(timeline.window.title).")
        // Outcomes that did not occur stay out of the legend; succeeded is always there.
        let outcomes = ["succeeded", "declined_soft", "declined_hard", "unknown", "pending", "skipped"]
            .filter { $0 == "succeeded" || timeline.charges[$0] != nil }
        let charges = ConsoleChart(title: "Charges by outcome, last 7 days", kind: .stackedBars, unit: "attempts per UTC day",
                                   labels: timeline.chargeDays,
                                   series: outcomes.map { .init(name: $0, values: timeline.charges[$0] ?? Array(repeating: 0, count: 7)) },
                                   emptyText: "No charge attempted in the last 7 days.")
        let note: HTML = accountNote
            ? "<p class=\"note\">Dead letters and charges carry no account: the dead-letter and charge charts, and the fulfillment chart's \"sent to review\", cover the whole provider; \"fulfilled\" counts this account's orders.</p>" : ""
        return """
            <div class="grid wide">
            <div class="card">\(letters.render())<p class="note"><a href="/console/dead-letters">Open dead letters</a></p></div>
            <div class="card">\(fulfillment.render())<p class="note">Sent to review: a <code>fulfill_order</code> check found a
            mismatch (<a href="/console/waiting/human">orders in review</a>).</p></div>
            <div class="card">\(charges.render())</div>
            </div>\(note)
            """
    }

    static func overview(_ page: ConsolePage, reads: ConsoleReads, window: ConsoleWindow) async throws -> HTTPResponse {
        let overview = try await reads.overview()
        let timeline = try await reads.timeline(window)
        let now = Date()
        let oldest: HTML = overview.oldestPending.map { "oldest received \(HTML.time($0, now: now))" } ?? "nothing waiting"
        let providers = ProviderID.allCases.map { provider -> HTML in
            let name = provider.rawValue
            let accepted = timeline.deliveries[name]?.accepted.reduce(0, +) ?? 0
            let duplicate = timeline.deliveries[name]?.duplicate.reduce(0, +) ?? 0
            let refused = timeline.deliveries[name]?.refused.reduce(0, +) ?? 0
            return """
                <section class="card provider" aria-labelledby="provider-\(name)">
                <h2 id="provider-\(name)"><a href="/console/providers/\(name)?window=\(window.rawValue)">\(name)</a>
                <span class="muted">\(Int64(accepted)) accepted, \(Int64(duplicate)) duplicate, \(Int64(refused)) refused in the \(window.title)</span></h2>
                <div class="grid">\(deliveriesChart(timeline, provider: name).render())\(lagChart(timeline, provider: name).render())</div>
                </section>
                """
        }
        let letters = table(["reason", "provider", "source", "open", "oldest"], overview.openLetters.map { group in
            let filter = "status=open&reason=\(Self.urlEncode(group.reason))&source=\(group.source)"
                + (group.provider.isEmpty ? "" : "&provider=\(Self.urlEncode(group.provider))")
            return ["<a href=\"/console/dead-letters?\(filter)\">\(group.reason)</a>", HTML.text(group.provider), "\(group.source)",
                    "\(group.count)", HTML.time(group.oldest, now: now)]
        }, numeric: [3], empty: "No open dead letters.")
        let jobs = table(["kind", "state", "jobs"], overview.jobs.map { row in
            ["\(row.labels[0])", badge(row.labels[1], ["discarded", "cancelled"].contains(row.labels[1]) ? "failed" : nil), "\(row.count)"]
        }, numeric: [2], empty: "No queued, running or failed jobs.")
        let body: HTML = """
            <h1>Overview</h1>
            <div class="grid">
            <div class="card"><h2>Inbound backlog</h2><div class="figure">\(overview.pending)</div>
            <div class="muted">pending deliveries; \(oldest)</div></div>
            <div class="card"><h2>Open dead letters</h2><div class="figure">\(overview.openLetters.reduce(0) { $0 + $1.count })</div>
            <div><a href="/console/waiting/human">waiting on a human</a></div></div>
            <div class="card"><h2>Subscriptions past due</h2><div class="figure">\(overview.pastDue)</div>
            <div><a href="/console/subscriptions?status=past_due">see them</a></div></div>
            </div>
            \(windowSwitch(window, base: "/console"))
            <p class="muted">Times are UTC; each bar or point is one interval (\(window.perInterval)), the newest still filling.
            Hover a bar or point for its value; each chart's figures are in the table under it.</p>
            \(providers)
            \(deliveryNote)
            \(outcomeCharts(timeline, accountNote: false))
            <div class="card"><h2>Open dead letters by reason</h2>\(letters)</div>
            <div class="card"><h2>Jobs</h2><p class="muted">Queued, running and failed jobs, and those finished in the last hour.</p>\(jobs)</div>
            """
        return page.render(title: "Overview", nav: "overview", body: body, autoRefresh: true)
    }

    /// Which key of the ring verified the last 24 hours' deliveries, per account, and when a
    /// previous key was last used: a previous key unused for longer than the provider retries
    /// old deliveries can be removed from the ring.
    static func keyRing(_ uses: [ConsoleReads.ProviderFacts.KeyUse], provider: String, now: Date) -> HTML {
        guard !uses.isEmpty else { return "<p class=\"muted\">No delivery from \(provider) in the last 24 hours.</p>" }
        let lines = uses.map { use -> HTML in
            let account = use.account.isEmpty ? "(default account)" : use.account
            let previous: HTML = use.lastPreviousKey.map {
                "\(use.previousKey) by a previous key, last use of a previous key \(HTML.time($0, now: now))"
            } ?? "none by a previous key"
            let unknown: HTML = use.notRecorded > 0 ? " (\(use.notRecorded) stored before payhook recorded the key)" : ""
            return "<li><strong>\(account)</strong>: \(use.currentKey) by the current key, \(previous)\(unknown)</li>"
        }
        return """
            <p>Last 24 h, deliveries by the key of the ring that verified them:</p><ul class="key-ring">\(HTML.join(lines, separator: ""))</ul>
            <p class="note">Once no previous key has verified anything for longer than \(provider) retries a delivery,
            the old secret can be removed from the ring.</p>
            """
    }

    /// One provider (and optionally one account): its charts, its last delivery and refusal,
    /// and what is known about its key ring.
    static func provider(_ page: ConsolePage, provider: ProviderID, account: String?, window: ConsoleWindow,
                         reads: ConsoleReads) async throws -> HTTPResponse {
        let name = provider.rawValue
        let timeline = try await reads.timeline(window, provider: name, account: account)
        let known = try await reads.providerFacts(provider: name, account: account)
        let now = Date()
        let base = "/console/providers/\(name)" + (account.map { "?account=\(urlEncode($0))" } ?? "")
        let accounts = (timeline.accounts[name] ?? []).sorted()
        let accountLinks: [HTML] = [account == nil ? "<strong>all accounts</strong>" : "<a href=\"/console/providers/\(name)?window=\(window.rawValue)\">all accounts</a>"]
            + accounts.map { item -> HTML in
                let label = item.isEmpty ? "(default account)" : item
                return item == account ? "<strong>\(label)</strong>"
                    : "<a href=\"/console/providers/\(name)?account=\(urlEncode(item))&window=\(window.rawValue)\">\(label)</a>"
            }
        let delivery: HTML = known.lastDelivery.map { last in
            facts([("when", HTML.time(last.receivedAt, now: now)), ("account", HTML.text(last.account.isEmpty ? "(default)" : last.account)),
                   ("event", HTML.text(last.eventType)),
                   ("dedup key", "<a href=\"/console/search?q=\(urlEncode(last.dedupKey))\"><code>\(last.dedupKey)</code></a>"),
                   ("status", badge(last.status))])
        } ?? "<p class=\"muted\">No delivery from \(name) is stored.</p>"
        let refusal: HTML = known.lastRefusal.map { last in
            facts([("when", HTML.time(last.receivedAt, now: now)), ("account", HTML.text(last.account.isEmpty ? "(default)" : last.account)),
                   ("reason", badge(last.reason, "failed")), ("from", HTML.text(last.remoteAddress))])
        } ?? "<p class=\"muted\">No refusal from \(name) is recorded.</p>"
        let heading: HTML = account.map { "<h1>\(name) <span class=\"muted\">account \($0.isEmpty ? "(default)" : $0)</span></h1>" }
            ?? "<h1>\(name)</h1>"
        let body: HTML = """
            \(heading)
            <p class="muted">\(account == nil ? "Accounts with deliveries in the \(window.title)" : "Showing one account (all accounts lists the others)"): \(HTML.join(accountLinks, separator: " · "))</p>
            \(windowSwitch(window, base: base))
            <div class="grid">
            <div class="card"><h2>Last delivery received</h2>\(delivery)</div>
            <div class="card"><h2>Last refusal recorded</h2>\(refusal)</div>
            <div class="card"><h2>Key-ring rotation</h2>\(keyRing(known.keyRing, provider: name, now: now))</div>
            </div>
            <div class="card"><div class="grid">\(deliveriesChart(timeline, provider: name).render())\(lagChart(timeline, provider: name).render())</div></div>
            \(deliveryNote)
            \(outcomeCharts(timeline, accountNote: account != nil))
            """
        return page.render(title: name, nav: "overview", body: body)
    }
}
