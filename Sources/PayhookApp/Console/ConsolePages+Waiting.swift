import Foundation
import PayhookHTTP
import PayhookProcessing

extension ConsolePages {
    /// "Waiting on the provider": payments and charges the provider sweep could not ask about
    /// (Adyen has no payment lookup) and that have not moved since. Each needs a person to
    /// check the provider's own dashboard; ops/runbooks/waiting-on-provider.md says how.
    static func waitingOnProvider(_ page: ConsolePage, items: [ProviderSweep.Waiting]) -> HTTPResponse {
        let now = Date()
        let rows: [[HTML]] = items.map { item in
            let reference: HTML = item.providerReference.map {
                "<a href=\"/console/search?q=\(urlEncode($0))\">\($0)</a>" as HTML
            } ?? HTML.text(nil)
            return ["\(item.subject)", "\(item.subjectID)", "\(item.provider)", reference,
                    badge(item.status ?? "unknown", "waiting"), "\(item.reason)", HTML.time(item.since, now: now)]
        }
        let body: HTML = """
            <h1>Waiting on the provider</h1>
            <p class="muted">Payments and charges that stopped moving and that payhook cannot look up: the provider
            never sent their outcome and has no API to ask. Check each in the provider's dashboard, then settle it there
            or by hand (<code>payhook charges resolve</code> for a charge); an entry leaves this list when its status
            moves. Runbook: ops/runbooks/waiting-on-provider.md.</p>
            <div class="card">\(table(["subject", "id", "provider", "provider reference", "status", "why", "waiting since"],
                                      rows, numeric: [1], empty: "Nothing is waiting on a provider."))</div>
            """
        return page.render(title: "Waiting on the provider", nav: "waiting", body: body)
    }
}
