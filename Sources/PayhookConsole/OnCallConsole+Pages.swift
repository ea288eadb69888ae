import PayhookAdmin
import PayhookCore
import PayhookHTTP
import PayhookProcessing
import PayhookSubscriptions

/// The console's page dispatch: for a signed-in request whose CSRF token (on a POST) was
/// checked, which page renders or which action runs, by method and path segments.
extension OnCallConsole {
    func routeSignedIn(_ context: Context, session: ConsoleSessions.Session, page: ConsolePage) async throws -> HTTPResponse {
        let method = context.request.method
        let route = context.route
        switch (method, route.count, route.first ?? "") {
        case ("GET", 0, _):
            return try await ConsolePages.overview(page, reads: reads, window: try ConsoleWindow.parse(context.query["window"]))
        case ("GET", 2, "providers"):
            guard let provider = ProviderID(rawValue: route[1]) else { return Self.notFound(page) }
            // `account=` (empty) is the default account; no `account` at all is every account.
            return try await ConsolePages.provider(page, provider: provider, account: context.query["account"],
                                                   window: try ConsoleWindow.parse(context.query["window"]), reads: reads)
        case ("POST", 1, "sign-out"):
            try await audit("console.sign_out", session: session, context)
            sessions.end(session.id)
            return Self.redirect("/console", cookies: [Self.cookie(ConsoleSessions.cookieName, "", maxAge: 0, secure: context.secure)])
        case ("GET", 1, "dead-letters"):
            return try await ConsolePages.deadLetters(page, query: context.query, reads: reads, bulk: bulkReplay.progress)
        case ("POST", 2, "dead-letters") where route[1] == "replay":
            return try await bulkReplayRequest(context, session: session)
        case ("GET", 2, "dead-letters"):
            return try await ConsolePages.deadLetter(page, id: try AdminRequest.pathID(route[1], of: "dead letter"),
                                                     operations: deadLetters, reads: reads)
        case ("POST", 3, "dead-letters") where ["dry-run", "replay", "discard"].contains(route[2]):
            return try await letterAction(context, session: session, id: try AdminRequest.pathID(route[1], of: "dead letter"), action: route[2])
        case ("GET", 1, "waiting"):
            return try await waitingOnProvider(page)
        case ("GET", 2, "waiting") where route[1] == "provider":
            return try await waitingOnProvider(page)
        case ("GET", 2, "waiting") where route[1] == "merchant":
            return ConsolePages.waitingOnMerchant(page, endpoints: try await reads.merchantEndpoints(limit: 100))
        case ("GET", 2, "waiting") where route[1] == "human":
            return ConsolePages.waitingOnHuman(page, reviews: try await reads.ordersInReview(limit: 200),
                                               charges: try await reads.unknownCharges(limit: 200),
                                               letters: try await reads.openLetterGroups())
        case ("POST", 3, "charges") where route[2] == "resolve":
            return try await chargeResolve(context, session: session, id: try AdminRequest.pathID(route[1], of: "charge"))
        case ("GET", 1, "search"):
            let text = context.query["q"] ?? ""
            return try await ConsolePages.search(page, text: text, hits: try await reads.search(text))
        case ("GET", 2, "orders"):
            return try await ConsolePages.order(page, order: try await orders.order(id: try AdminRequest.pathID(route[1], of: "order")))
        case ("GET", 1, "subscriptions"):
            let status = context.query["status"].flatMap { Subscription.Status(rawValue: $0) }
            return ConsolePages.subscriptions(page, status: status,
                                              list: try await subscriptions.list(status: status, provider: nil, limit: 200))
        case ("GET", 2, "subscriptions"):
            let id = try AdminRequest.pathID(route[1], of: "subscription")
            return ConsolePages.subscription(page, detail: try await subscriptions.detail(id: id),
                                             callbacks: try await reads.subscriptionCallbacks(id: id),
                                             audit: try await reads.audit(target: "subscription:\(id)"))
        case ("POST", 3, "subscriptions") where SubscriptionAdminAPI.actions.contains(route[2]):
            return try await subscriptionAction(context, session: session, id: try AdminRequest.pathID(route[1], of: "subscription"), action: route[2])
        case ("GET", _, _), ("POST", _, _):
            return Self.notFound(page)
        default:
            return HTTPResponse.text(405, "method not allowed\n")
        }
    }

    static func notFound(_ page: ConsolePage) -> HTTPResponse {
        page.render(status: 404, title: "Not found", nav: "", body: "<h1>Not found</h1><p>No console page at this address.</p>")
    }

    private func waitingOnProvider(_ page: ConsolePage) async throws -> HTTPResponse {
        ConsolePages.waitingOnProvider(page, items: try await ProviderSweep.waiting(limit: 500, on: reads.pool),
                                       checking: try await reads.providerChecks(limit: 200))
    }
}
