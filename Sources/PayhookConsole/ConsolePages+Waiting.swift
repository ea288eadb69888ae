import Foundation
import PayhookAdmin
import PayhookCore
import PayhookHTTP
import PayhookProcessing

extension ConsolePages {
    /// The three "waiting on" lists share a heading row that links them.
    static func waitingTabs(_ current: String) -> HTML {
        let tabs: [(key: String, label: String)] = [("provider", "on the provider"), ("merchant", "on the merchant"), ("human", "on a human")]
        let links = tabs.map { tab -> HTML in
            tab.key == current
                ? "<a class=\"current\" aria-current=\"page\" href=\"/console/waiting/\(tab.key)\">\(tab.label)</a>"
                : "<a href=\"/console/waiting/\(tab.key)\">\(tab.label)</a>"
        }
        return "<nav class=\"windows\" aria-label=\"Waiting lists\"><span class=\"muted\">Waiting:</span>\(HTML.join(links, separator: " · "))</nav>"
    }

    /// How long since `date`, for a "waiting" column: `3 h`, with the instant on hover.
    static func waited(_ date: Date?, now: Date) -> HTML {
        guard let date else { return HTML.text(nil) }
        let iso = JSONOutput.format(date)
        return "<time datetime=\"\(iso)\" title=\"since \(HTML.utc(date))\">\(HTML.duration(max(0, Int(now.timeIntervalSince(date)))))</time>"
    }

    static func subjectLink(_ subject: String, _ id: Int64, reference: String?) -> HTML {
        switch subject {
        case "order", "fulfillment": return "<a href=\"/console/orders/\(id)\">order \(id)</a>"
        default:
            guard let reference else { return "\(subject) \(id)" }
            return "<a href=\"/console/search?q=\(urlEncode(reference))\">\(subject) \(id)</a>"
        }
    }

    /// "Waiting on the provider": what payhook is still asking the provider about, and what the
    /// provider sweep could not ask about (Adyen has no payment lookup) and that has not moved
    /// since. ops/runbooks/waiting-on-provider.md says how to settle the latter.
    static func waitingOnProvider(_ page: ConsolePage, items: [ProviderSweep.Waiting],
                                  checking: [ConsoleReads.ProviderCheck]) -> HTTPResponse {
        let now = Date()
        let rows: [[HTML]] = items.map { item in
            let reference: HTML = item.providerReference.map {
                "<a href=\"/console/search?q=\(urlEncode($0))\">\($0)</a>" as HTML
            } ?? HTML.text(nil)
            let next: HTML = item.subject == "charge"
                ? "Nothing automatic. Check the \(item.provider) dashboard, then settle it: <a href=\"/console/waiting/human\">charges resolve</a>."
                : "Nothing automatic. Check the \(item.provider) dashboard; a webhook or a replay moves it."
            return ["\(item.subject)", "\(item.subjectID)", "\(item.provider)", reference,
                    badge(item.status ?? "unknown", "waiting"), "\(item.reason)", waited(item.since, now: now), next]
        }
        let chased: [[HTML]] = checking.map { item in
            let next: HTML = item.subject == "fulfillment"
                ? "Checks the order again when the missing fact arrives; sends it to review if it has not after the review delay."
                : "Asks \(item.provider) again on the next sweep (\(item.checks) lookup(s) so far, last \(HTML.time(item.lastCheckedAt, now: now)))."
            return [subjectLink(item.subject, item.subjectID, reference: item.reference), "\(item.provider)", HTML.text(item.reference),
                    badge(item.status, "waiting"), "\(item.reason)", waited(item.since, now: now), next]
        }
        let body: HTML = """
            <h1>Waiting on the provider</h1>
            \(waitingTabs("provider"))
            <div class="card"><h2>Needs a person: the provider cannot be asked</h2>
            <p class="muted">Payments and charges that stopped moving and that payhook cannot look up: the provider
            never sent their outcome and has no API to ask. Check each in the provider's dashboard, then settle it there
            or by hand (<code>payhook charges resolve</code> for a charge); an entry leaves this list when its status
            moves. Runbook: ops/runbooks/waiting-on-provider.md.</p>
            \(table(["subject", "id", "provider", "provider reference", "status", "why", "waiting", "what payhook does next"],
                    rows, numeric: [1, 6], empty: "Nothing is waiting on a provider."))</div>
            <div class="card"><h2>payhook is on it: asking the provider, or waiting for a webhook</h2>
            <p class="muted">Subjects the provider sweep looks up, and registered orders whose fulfillment lacks a fact
            (a capture's amount, a payment still pending). Nothing to do unless one stays here long.</p>
            \(table(["subject", "provider", "reference", "status", "why", "waiting", "what payhook does next"],
                    chased, numeric: [5], empty: "payhook is not chasing any provider."))</div>
            """
        return page.render(title: "Waiting on the provider", nav: "waiting", body: body)
    }

    /// "Waiting on the merchant": callbacks the merchant's endpoint has not accepted, by endpoint.
    static func waitingOnMerchant(_ page: ConsolePage, endpoints: [ConsoleReads.MerchantEndpoint]) -> HTTPResponse {
        let now = Date()
        let rows: [[HTML]] = endpoints.map { endpoint in
            let answer: HTML = endpoint.lastStatusCode.map { badge("HTTP \($0)", $0 >= 500 || $0 == 0 ? "failed" : "waiting") }
                ?? endpoint.lastError.map { "<span class=\"error\">\(shortened($0, to: 120))</span>" as HTML }
                ?? "<span class=\"muted\">not tried yet</span>"
            let retry: HTML = endpoint.nextAttempt.map { "retry \(HTML.time($0, now: now))" as HTML }
                ?? (endpoint.givenUp > 0 ? "none: retries exhausted" as HTML : "<span class=\"muted\">being sent</span>")
            // A callback given up is sent again by replaying its dead letter (the letter's page
            // has the audited, CSRF-protected Replay form).
            let next: HTML = endpoint.firstLetter.map {
                "\(retry)<br><a href=\"/console/dead-letters/\($0)\">replay dead letter \($0)</a> once the endpoint answers" as HTML
            } ?? retry
            let example: HTML = endpoint.firstOrder.map { "<a href=\"/console/orders/\($0)\">order \($0)</a>" as HTML }
                ?? "<a href=\"/console/search?q=\(urlEncode(endpoint.firstWebhookID))\">\(shortened(endpoint.firstWebhookID, to: 40))</a>"
            return ["<code>\(endpoint.url.isEmpty ? "(no URL)" : endpoint.url)</code>", "\(endpoint.callbacks)",
                    endpoint.givenUp > 0 ? badge(String(endpoint.givenUp), "failed") : "0", answer, next,
                    waited(endpoint.oldest, now: now), example]
        }
        let body: HTML = """
            <h1>Waiting on the merchant</h1>
            \(waitingTabs("merchant"))
            <div class="card"><p class="muted">Signed callbacks (<code>order.paid</code>, <code>subscription.*</code>) the
            merchant's endpoint has not accepted, one row per endpoint. payhook retries each with backoff; once retries
            are exhausted the callback is <em>given up</em> and its job is a dead letter: replay it from the
            <a href="/console/dead-letters?source=job">dead letters</a> (or from the example's journey) when the endpoint
            answers again.</p>
            \(table(["endpoint", "waiting", "given up", "last answer", "next attempt", "oldest waits", "example"],
                    rows, numeric: [1, 2, 5], empty: "No callback is waiting on the merchant."))</div>
            """
        return page.render(title: "Waiting on the merchant", nav: "waiting", body: body)
    }

    /// "Waiting on a human": orders in review, charges only `charges resolve` settles, and open
    /// dead letters by reason, each with the audited form that resolves it.
    static func waitingOnHuman(_ page: ConsolePage, reviews: [ConsoleReads.OrderInReview], charges: [ConsoleReads.UnknownCharge],
                               letters: [ConsoleReads.Overview.LetterGroup]) -> HTTPResponse {
        let now = Date()
        let reviewRows: [[HTML]] = reviews.map { order in
            let action: HTML = order.letter.map { letter in
                """
                <form method="post" action="/console/dead-letters/\(letter)/replay" class="inline">\(page.csrfField)
                <input type="text" name="note" required placeholder="why (audited)" aria-label="Note for re-checking order \(order.id)">
                <button type="submit">Re-check</button></form>
                """
            } ?? "<a href=\"/console/orders/\(order.id)\">open the order</a>"
            return ["<a href=\"/console/orders/\(order.id)\">\(order.id)</a>", "\(order.provider)", HTML.text(order.reference),
                    "<span class=\"error\">\(order.reason)</span>", waited(order.since, now: now), action]
        }
        let chargeRows: [[HTML]] = charges.map { charge in
            [
                "\(charge.id)", "<a href=\"/console/subscriptions/\(charge.subscriptionID)\">\(charge.subscriptionID)</a>",
                HTML.text(charge.provider), "<code>\(charge.idempotencyKey)</code>", money(charge.amountMinor, charge.currency),
                waited(charge.since, now: now), HTML.text(shortened(charge.lastError, to: 120)),
                """
                <form method="post" action="/console/charges/\(charge.id)/resolve" class="inline">\(page.csrfField)
                <select name="as" aria-label="Outcome at the provider"><option value="failed">failed</option><option value="succeeded">succeeded</option></select>
                <input type="text" name="provider_payment_id" placeholder="payment id, if succeeded" aria-label="Provider payment id">
                <input type="text" name="note" required placeholder="note (audited)" aria-label="Note">
                <button type="submit">Resolve</button></form>
                """,
            ]
        }
        let letterRows: [[HTML]] = letters.map { group in
            let filter = "status=open&reason=\(urlEncode(group.reason))&source=\(group.source)"
                + (group.provider.isEmpty ? "" : "&provider=\(urlEncode(group.provider))")
            return ["<a href=\"/console/dead-letters?\(filter)\">\(group.reason)</a>", HTML.text(group.provider), "\(group.source)",
                    "\(group.count)", waited(group.oldest, now: now),
                    "<a href=\"/console/dead-letters?\(filter)\">inspect, replay or discard</a>"]
        }
        let body: HTML = """
            <h1>Waiting on a human</h1>
            \(waitingTabs("human"))
            <div class="card"><h2>Orders in review</h2>
            <p class="muted">Fulfillment found a mismatch and did not send <code>order.paid</code>. Fix the cause (or
            confirm the order at the provider), then re-check: the check runs again and fulfills the order if the facts
            now match, or sends it back here with its reason.</p>
            \(table(["order", "provider", "reference", "reason", "waiting", "action"], reviewRows, numeric: [4],
                    empty: "No order is in review."))</div>
            <div class="card"><h2>Charges needing <code>charges resolve</code></h2>
            <p class="muted">Outcome unknown: the provider's idempotency window passed and nothing answered. Look the charge
            up at the provider by its key, then record what it shows (same as <code>payhook charges resolve</code>).</p>
            \(table(["charge", "subscription", "provider", "idempotency key", "amount", "unknown for", "last error", "action"],
                    chargeRows, numeric: [0, 4, 5], empty: "No charge has an unknown outcome."))</div>
            <div class="card"><h2>Open dead letters by reason</h2>
            \(table(["reason", "provider", "source", "open", "oldest waits", "action"], letterRows, numeric: [3, 4],
                    empty: "No open dead letters."))</div>
            """
        return page.render(title: "Waiting on a human", nav: "waiting", body: body)
    }
}
