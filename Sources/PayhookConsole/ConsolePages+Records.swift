import Foundation
import PayhookAdmin
import PayhookHTTP
import PayhookOperations
import PayhookProcessing
import PayhookSubscriptions

extension ConsolePages {
    static func search(_ page: ConsolePage, text: String, hits: [ConsoleReads.Hit]) async throws -> HTTPResponse {
        let now = Date()
        let results: [HTML] = hits.map { hit in
            let steps = hit.steps.map { step -> HTML in
                let summary: HTML = step.link.map { "<a href=\"\($0)\">\(step.summary)</a>" } ?? "\(step.summary)"
                return "<li class=\"\(step.outcome)\"><span class=\"stage\">\(step.stage)</span><span>\(HTML.time(step.at, now: now))</span><span>\(summary)</span></li>"
            }
            let title: HTML = hit.link.map { "<a href=\"\($0)\">\(hit.title)</a>" } ?? "\(hit.title)"
            return "<div class=\"card\"><h2>\(title)</h2><ol class=\"timeline\">\(steps)</ol></div>"
        }
        let body: HTML = """
            <h1>Search</h1>
            <div class="card"><form class="filters" method="get" action="/console/search">
            <label>Provider payment id, order id, merchant reference, dedup key or idempotency key
            <input type="search" name="q" size="48" value="\(text)"></label><button type="submit">Search</button></form></div>
            \(text.isEmpty ? "" : hits.isEmpty ? "<p class=\"muted\">Nothing matches \(text).</p>" as HTML : "<p class=\"muted\">\(hits.count) match(es) for <code>\(text)</code>; each with its journey: received → verified → processed → payment and order → jobs → callbacks and charges.</p>" as HTML)
            \(results)
            """
        return page.render(title: "Search", nav: "", body: body, searchText: text)
    }

    static func money(_ minor: Int64?, _ currency: String?) -> HTML {
        guard let minor else { return HTML.text(nil) }
        return "\(ConsoleMoney.format(minor, currency ?? ""))"
    }

    static func callbackRows(_ callbacks: [OrderRecord.Callback], now: Date) -> [[HTML]] {
        callbacks.map { callback in
            ["\(callback.type)", "<code>\(callback.webhookID)</code>",
             badge(callback.status, callback.status == "delivered" ? "ok" : callback.status == "pending" ? "waiting" : "failed"),
             "\(callback.attempts)", callback.lastStatusCode.map { "HTTP \($0)" } ?? HTML.text(nil),
             HTML.time(callback.createdAt, now: now), HTML.time(callback.deliveredAt, now: now)]
        }
    }

    static func order(_ page: ConsolePage, order: OrderRecord) async throws -> HTTPResponse {
        let now = Date()
        let summary = facts([
            ("provider", "\(order.provider)\(order.account.isEmpty ? "" : " / " + order.account)"),
            ("merchant reference", HTML.text(order.merchantReference)), ("provider order id", HTML.text(order.providerOrderID)),
            ("expected amount", money(order.expectedAmountMinor, order.expectedCurrency)), ("provider status", "\(order.status)"),
            ("fulfillment", badge(order.fulfillmentStatus, order.fulfillmentStatus == "fulfilled" ? "ok"
                : ["needs_review", "failed"].contains(order.fulfillmentStatus) ? "failed" : "waiting")),
            ("review reason", HTML.text(order.reviewReason)),
            ("waiting for", HTML.text(order.waitingFor)), ("waiting since", HTML.time(order.waitingSince, now: now)),
            ("provider orders", HTML.text(order.providerOrders.isEmpty ? nil
                : order.providerOrders.map { "\($0.providerOrderID ?? "?") (\($0.status))" }.joined(separator: ", "))),
            ("callback URL", HTML.text(order.callbackURL)),
            ("registered", HTML.time(order.registeredAt, now: now)), ("fulfilled", HTML.time(order.fulfilledAt, now: now)),
            ("created", HTML.time(order.createdAt, now: now)), ("updated", HTML.time(order.updatedAt, now: now)),
        ])
        let payments = table(["provider payment id", "status", "amount", "refunded", "reference", "method", "funding", "chargebacks", "updated"],
                             order.payments.map { payment in
            ["<a href=\"/console/search?q=\(urlEncode(payment.providerPaymentID))\">\(payment.providerPaymentID)</a>",
             badge(payment.status, ["captured", "authorized"].contains(payment.status) ? "ok" : payment.status == "pending" ? "waiting" : "failed"),
             money(payment.amountMinor, payment.currency), money(payment.refundedMinor, payment.currency),
             HTML.text(payment.merchantReference), HTML.text(payment.method), HTML.text(payment.funding),
             "\(payment.chargebacks - payment.chargebackReversals)", HTML.time(payment.updatedAt, now: now)]
        }, numeric: [2, 3, 7], empty: "No payments linked yet.")
        let callbacks = table(["type", "webhook id", "status", "attempts", "last answer", "created", "delivered"],
                              callbackRows(order.callbacks, now: now), numeric: [3], empty: "No callbacks sent.")
        let body: HTML = """
            <h1>Order \(order.id)</h1>
            <div class="card">\(summary)</div>
            <div class="card"><h2>Payments</h2>\(payments)</div>
            <div class="card"><h2>Callbacks to the merchant</h2>\(callbacks)</div>
            <p><a href="/console/search?q=\(order.id)">Journey of this order →</a></p>
            """
        return page.render(title: "Order \(order.id)", nav: "", body: body)
    }

    static func subscriptionBadge(_ status: Subscription.Status) -> HTML {
        let kind: String? = switch status {
        case .active: "ok"
        case .pastDue, .canceled: "failed"
        case .paused: "waiting"
        case .completed: nil
        }
        return badge(status.rawValue, kind)
    }

    static func subscriptions(_ page: ConsolePage, status: Subscription.Status?, list: [Subscription]) -> HTTPResponse {
        let now = Date()
        let filters = ([nil] + Subscription.Status.allCases).map { option -> HTML in
            let label = option?.rawValue ?? "all"
            let href = option.map { "/console/subscriptions?status=\($0.rawValue)" } ?? "/console/subscriptions"
            return option == status ? "<strong>\(label)</strong> " : "<a href=\"\(href)\">\(label)</a> "
        }
        let rows = list.map { subscription -> [HTML] in
            ["<a href=\"/console/subscriptions/\(subscription.id)\">\(subscription.id)</a>", "\(subscription.reference)",
             subscriptionBadge(subscription.status), "\(subscription.vaultToken.provider)",
             money(subscription.amountMinor, subscription.currency), "\(subscription.cycle)",
             HTML.time(subscription.nextChargeAt, now: now), HTML.text(subscription.statusReason)]
        }
        let body: HTML = """
            <h1>Subscriptions</h1>
            <div class="card"><p>Status: \(filters)</p>
            \(table(["id", "reference", "status", "provider", "amount", "next cycle", "next charge", "reason"], rows, numeric: [4, 5],
                    empty: "No subscriptions with this status."))
            <p class="muted">Newest first, at most 200.</p></div>
            """
        return page.render(title: "Subscriptions", nav: "subscriptions", body: body)
    }

    static func subscription(_ page: ConsolePage, detail: SubscriptionOperations.Detail, callbacks: [OrderRecord.Callback],
                             audit: [ConsoleReads.AuditEntry]) -> HTTPResponse {
        let now = Date()
        let subscription = detail.subscription
        let summary = facts([
            ("reference", "\(subscription.reference)"), ("status", subscriptionBadge(subscription.status)),
            ("status reason", HTML.text(subscription.statusReason)),
            ("amount", money(subscription.amountMinor, subscription.currency)),
            ("interval", subscription.interval.map { "\($0.readable)" } ?? "<code>\(subscription.intervalJSON)</code>"),
            ("vault token", "\(subscription.vaultToken.provider) token \(subscription.vaultToken.id) (\(subscription.vaultToken.status))"),
            ("next cycle", "\(subscription.cycle)\(subscription.maxCycles.map { " of \($0)" } ?? "")"),
            ("next charge", HTML.time(subscription.nextChargeAt, now: now)), ("started", HTML.time(subscription.startAt, now: now)),
            ("ends", HTML.time(subscription.endAt, now: now)), ("canceled", HTML.time(subscription.canceledAt, now: now)),
        ])
        // Grouped by cycle so each cycle's attempts (and their distinct keys) read together.
        let cycles = Dictionary(grouping: detail.charges, by: \.cycle).sorted { $0.key < $1.key }
        let chargeTables = cycles.map { cycle, charges -> HTML in
            let rows = charges.map { charge -> [HTML] in
                let step = ConsoleReads.chargeStep(charge)
                return ["\(charge.attempt)", badge(charge.status, step.outcome), money(charge.amountMinor, charge.currency),
                        "<code>\(charge.idempotencyKey)</code>",
                        charge.providerPaymentID.map { "<a href=\"/console/search?q=\(urlEncode($0))\">\($0)</a>" } ?? HTML.text(nil),
                        HTML.text(charge.declineCode), "\(charge.calls)", HTML.time(charge.attemptedAt, now: now),
                        HTML.time(charge.settledAt, now: now), HTML.text(charge.lastError)]
            }
            return "<h2>Cycle \(cycle)</h2>\(table(["attempt", "status", "amount", "idempotency key", "provider payment", "decline", "calls", "sent", "settled", "last error"], rows, numeric: [0, 2, 6]))"
        }
        let base = "/console/subscriptions/\(subscription.id)"
        func action(_ verb: String, _ label: String, _ style: String, _ explain: String) -> HTML {
            """
            <form method="post" action="\(base)/\(verb)">\(page.csrfField)<p>\(explain)</p>
            <label>Note<textarea name="note" placeholder="optional, goes to the audit log"></textarea></label>
            <button class="\(style)" type="submit">\(label)</button></form>
            """
        }
        var forms: [HTML] = []
        if subscription.status == .active { forms.append(action("pause", "Pause", "", "Stops charging until resumed.")) }
        if subscription.status == .paused || subscription.status == .pastDue {
            forms.append(action("resume", "Resume", "primary", "Charges again from the next cycle due; missed cycles are skipped and the merchant told."))
        }
        if subscription.status != .canceled && subscription.status != .completed {
            forms.append(action("cancel", "Cancel", "danger", "Stops charging for good; attempts not yet sent are skipped."))
        }
        let auditRows = audit.map { entry -> [HTML] in
            [HTML.time(entry.at, now: now), "\(entry.actor)", "\(entry.action)", "<div class=\"audit-details\">\(HTML.prettyJSON(entry.detailsJSON))</div>"]
        }
        let body: HTML = """
            <h1>Subscription \(subscription.id)</h1>
            <div class="grid"><div class="card">\(summary)</div>
            <div class="card"><h2>Actions</h2>\(forms.isEmpty ? "<p class=\"muted\">Nothing left to do.</p>" as HTML : "<div class=\"actions\">\(forms)</div>" as HTML)</div></div>
            <div class="card"><h2>Charges</h2>\(chargeTables.isEmpty ? "<p class=\"muted\">No charges yet.</p>" as HTML : HTML.join(chargeTables))</div>
            <div class="card"><h2>Callbacks to the merchant</h2>\(table(["type", "webhook id", "status", "attempts", "last answer", "created", "delivered"], callbackRows(callbacks, now: now), numeric: [3], empty: "No callbacks sent."))</div>
            <div class="card"><h2>Audit</h2>\(table(["when", "actor", "action", "details"], auditRows, empty: "No operator has acted on this subscription."))</div>
            """
        return page.render(title: "Subscription \(subscription.id)", nav: "subscriptions", body: body)
    }
}
