import Foundation
package import PayhookAdmin
import PayhookCore
import PayhookCrypto
package import PayhookHTTP
package import PayhookIngress
import PayhookOperations
package import PayhookPostgres
package import PayhookProcessing
import PayhookQueue
package import PayhookSubscriptions

/// The on-call console: server-rendered HTML under `/console` on the admin listener.
///
/// It signs operators in with an operator-scope admin credential (a session cookie, not the
/// bearer header, because a browser cannot send one), and reads and acts through the same
/// operations as the CLI and the JSON API, so an action here is audited exactly as one there.
/// The actor is the credential's name (or, behind a configured authenticating proxy, the person
/// it names); the name typed at sign-in is only a note beside it.
///
/// Defences, each because webhook data is attacker-controlled and the admin token is powerful:
/// every interpolated string is escaped (`HTML`); every response carries a Content-Security-Policy
/// allowing only this origin's stylesheet and script (no inline script can run even if escaping
/// failed); the session cookie is `HttpOnly; SameSite=Strict`; every POST must carry the
/// session's CSRF token (sign-in: a double-submit cookie) or gets 403 and changes nothing.
package struct OnCallConsole: Sendable {
    /// The admin credentials accepted now; the composition root's store, reloaded on SIGHUP.
    let credentials: any AdminCredentialSource
    /// Who signed in behind an authenticating reverse proxy: a header believed only from the
    /// proxy's addresses (`PAYHOOK_ADMIN_IDENTITY_HEADER`, `PAYHOOK_ADMIN_TRUSTED_PROXIES`).
    let proxyIdentity: (header: String, proxies: AddressAllowList)?
    let sessions: ConsoleSessions
    let deadLetters: DeadLetterOperations
    let subscriptions: SubscriptionOperations
    let orders: OrderService
    let charges: ChargeOperations
    let reads: ConsoleReads
    package let bulkReplay: ConsoleBulkReplay

    /// The console over `pool`, as `PayhookServer` wires it on the admin listener; the settings
    /// are the configuration's, so an action here follows the same rules as the CLI's.
    package init(pool: PostgresPool, credentials: any AdminCredentialSource, proxyIdentity: (header: String, proxies: AddressAllowList)?,
                 fulfillment: FulfillmentSettings, subscriptions: SubscriptionSettings) {
        let orders = OrderService(pool: pool, trigger: FulfillmentTrigger(queue: JobQueue(pool: pool), settings: fulfillment))
        self.init(credentials: credentials, proxyIdentity: proxyIdentity, sessions: ConsoleSessions(),
                  deadLetters: DeadLetterOperations(pool: pool), subscriptions: SubscriptionOperations(pool: pool),
                  orders: orders,
                  charges: ChargeOperations(pool: pool, queue: JobQueue(pool: pool), settings: subscriptions),
                  reads: ConsoleReads(pool: pool), bulkReplay: ConsoleBulkReplay())
    }

    init(credentials: any AdminCredentialSource, proxyIdentity: (header: String, proxies: AddressAllowList)?, sessions: ConsoleSessions,
         deadLetters: DeadLetterOperations, subscriptions: SubscriptionOperations, orders: OrderService, charges: ChargeOperations,
         reads: ConsoleReads, bulkReplay: ConsoleBulkReplay) {
        self.credentials = credentials
        self.proxyIdentity = proxyIdentity
        self.sessions = sessions
        self.deadLetters = deadLetters
        self.subscriptions = subscriptions
        self.orders = orders
        self.charges = charges
        self.reads = reads
        self.bulkReplay = bulkReplay
    }

    static let prefix = "/console"
    static let signInCookie = "payhook_console_signin"

    /// `default-src 'none'` and only same-origin style, script, images and form targets:
    /// no inline script, no `eval`, no other origin, no framing.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    /// The console's entry in the admin listener's route table: everything under `/console`,
    /// signed in with the console's own session, so the router runs no bearer check before it.
    package var route: AdminRoute {
        .consoleSession(Self.prefix) { [self] request, segments in
            var response = await answer(request, segments: segments)
            response.headers += Self.securityHeaders
            return response
        }
    }

    /// One request, after parsing: the session it names and its form fields.
    struct Context: Sendable {
        let request: HTTPRequest
        let session: ConsoleSessions.Session?
        let form: [String: String]
        /// Every form field in order, for fields that repeat (the list's `id` checkboxes).
        let formPairs: [(String, String)]
        let query: [String: String]
        let route: [String]
        /// Whether cookies get `Secure`: the browser reached us over HTTPS (through a proxy).
        let secure: Bool
    }

    /// - Parameter segments: the path segments after `/console`, as the router matched them.
    func answer(_ request: HTTPRequest, segments: [String]) async -> HTTPResponse {
        // A trailing or doubled slash names the same page: `/console/` is the overview.
        let route = segments.filter { !$0.isEmpty }
        let cookies = Self.cookies(request)
        let isForm = request.method == "POST"
        let formPairs = isForm ? AdminRequest.queryPairs(String(decoding: request.body, as: UTF8.self)) : []
        var form: [String: String] = [:]
        for (name, value) in formPairs { form[name] = value }
        var query: [String: String] = [:]
        for (name, value) in AdminRequest.queryPairs(request.rawQuery) { query[name] = value }
        var session = sessions.session(cookies[ConsoleSessions.cookieName])
        // A credential removed from the file (and reloaded) ends the sessions it started.
        if let current = session, !credentials.credentials.contains(current.credential) {
            sessions.end(current.id)
            session = nil
        }
        let context = Context(
            request: request, session: session, form: form, formPairs: formPairs,
            query: query, route: route, secure: request.header("x-forwarded-proto")?.lowercased() == "https")

        switch (request.method, route.count, route.first ?? "") {
        case ("GET", 1, "console.css"):
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/css; charset=utf-8")], body: Array(ConsoleAssets.css.utf8))
        case ("GET", 1, "console.js"):
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/javascript; charset=utf-8")],
                                body: Array(ConsoleAssets.javascript.utf8))
        case ("GET", 1, "icon.svg"):
            return HTTPResponse(status: 200, headers: [("Content-Type", "image/svg+xml")], body: Array(ConsoleAssets.icon.utf8))
        case ("POST", 1, "sign-in"):
            return await signIn(context, cookies: cookies)
        default:
            break
        }
        guard let session = context.session else {
            if request.method == "GET" || request.method == "HEAD" {
                return route.isEmpty ? signInPage(context, error: nil) : Self.redirect("/console")
            }
            return ConsolePages.forbidden("Your session has ended. Sign in again; nothing was changed.")
        }
        if request.method == "POST" {
            guard ConsoleSessions.csrfMatches(session, form["csrf"]) else {
                return ConsolePages.forbidden("This form has no valid CSRF token, so nothing was changed. Reload the page and try again.")
            }
        }
        // A POST answers with a redirect: the message waits for the page the browser lands on.
        let page = ConsolePage(session: session, flash: request.method == "GET" ? sessions.takeFlash(session.id) : nil)
        do {
            return try await routeSignedIn(context, session: session, page: page)
        } catch {
            let failure = OperationsError.wrapping(error)
            return page.render(status: failure.httpStatus, title: "Error", nav: "", body: ConsolePages.errorBody(failure))
        }
    }

    private func routeSignedIn(_ context: Context, session: ConsoleSessions.Session, page: ConsolePage) async throws -> HTTPResponse {
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

    // MARK: sign-in

    private func signInPage(_ context: Context, error: String?, status: Int = 200) -> HTTPResponse {
        let token = ConsoleSessions.randomToken()
        var response = ConsolePages.signIn(csrf: token, error: error, status: status)
        response.headers.append(("Set-Cookie", Self.cookie(Self.signInCookie, token, maxAge: 1800, secure: context.secure)))
        return response
    }

    /// One console session event in the audit trail, with where the browser connected from.
    private func audit(_ action: String, session: ConsoleSessions.Session, _ context: Context) async throws {
        try await reads.pool.withConnection { connection in
            try await AuditTrail.record(on: connection, actor: session.actor, actorNote: session.actorNote, action: action,
                                        target: "console", details: Self.details(session, context))
        }
    }

    /// Where an action came from: the console, the browser's address and, when a proxy named
    /// the person, the credential they signed in with.
    private static func details(_ session: ConsoleSessions.Session, _ context: Context) -> [JSONOutput.Member] {
        var details: [JSONOutput.Member] = [.init("via", .string("console")), .init("remote_addr", .string(context.request.remoteAddress))]
        if session.actor != session.credential.name { details.append(.init("credential", .string(session.credential.name))) }
        return details
    }

    /// The person an authenticating reverse proxy names, when the request came from one of the
    /// configured proxy addresses; the header is ignored from anywhere else (anyone can send it).
    private func identityFromProxy(_ request: HTTPRequest) -> String? {
        guard let proxyIdentity, proxyIdentity.proxies.allows(request.remoteAddress),
              let value = request.header(proxyIdentity.header)?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return String(value.prefix(128))
    }

    private func signIn(_ context: Context, cookies: [String: String]) async -> HTTPResponse {
        // Double-submit: a page on another origin can post this form but cannot read or set our
        // cookie, so it cannot make the two match (and SameSite=Strict withholds the cookie).
        guard let expected = cookies[Self.signInCookie], !expected.isEmpty,
              ConstantTime.equals(Array((context.form["csrf"] ?? "").utf8), Array(expected.utf8)) else {
            return ConsolePages.forbidden("This sign-in form has no valid CSRF token, so nothing was started. Reload the page and sign in again.")
        }
        let accepted = credentials.credentials
        guard !accepted.all.isEmpty else {
            return signInPage(context, error: "No admin credential is configured on this server, so nobody can sign in.", status: 503)
        }
        // Digests compared in constant time (AdminCredentials.authenticate).
        guard let credential = accepted.authenticate(context.form["token"] ?? "") else {
            return signInPage(context, error: "That is not the admin token, nor any admin credential's. No session was started.", status: 401)
        }
        guard credential.scope.permits(.operator) else {
            return signInPage(context, error: "That credential has the \(credential.scope.rawValue) scope; the console needs operator. No session was started.",
                              status: 403)
        }
        let name = (context.form["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let session = sessions.start(actor: identityFromProxy(context.request) ?? credential.name,
                                     actorNote: name.isEmpty ? nil : String(name.prefix(64)), credential: credential)
        // No session without its record: who acted through the console is always on file.
        do {
            try await audit("console.sign_in", session: session, context)
        } catch {
            sessions.end(session.id)
            return signInPage(context, error: "The sign-in could not be recorded (database unavailable), so no session was started.", status: 503)
        }
        return Self.redirect("/console", cookies: [
            Self.cookie(Self.signInCookie, "", maxAge: 0, secure: context.secure),
            Self.cookie(ConsoleSessions.cookieName, session.id, maxAge: Int(ConsoleSessions.lifetime), secure: context.secure),
        ])
    }

    // MARK: actions

    private func operatorAction(_ context: Context, session: ConsoleSessions.Session, note: String?) -> OperatorAction {
        OperatorAction(actor: session.actor, actorNote: session.actorNote, note: note, context: Self.details(session, context))
    }

    private func note(_ context: Context) -> String? {
        let text = (context.form["note"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    private func letterAction(_ context: Context, session: ConsoleSessions.Session, id: Int64, action: String) async throws -> HTTPResponse {
        let back = "/console/dead-letters/\(id)"
        let flash: ConsoleSessions.Flash
        switch action {
        case "dry-run":
            let detail = try await deadLetters.detail(id: id)
            flash = .init(kind: "info", text: "Dry run, nothing changed. A replay would: \(detail.replayPlan).")
        case "replay":
            guard let note = note(context) else {
                flash = .init(kind: "error", text: "Replay refused: say why in the note (it goes to the audit log). Nothing was changed.")
                break
            }
            let outcome = try await deadLetters.replay(id: id, by: operatorAction(context, session: session, note: note))
            flash = .init(kind: outcome.changed ? "ok" : "info", text: "Replay: \(outcome.effect).")
        default:
            let action = operatorAction(context, session: session, note: note(context))
            let result = await Result(catching: { () async throws(OperationsError) in try await deadLetters.discard(id: id, by: action) })
            switch result {
            case .success(let outcome):
                flash = .init(kind: outcome.changed ? "ok" : "info", text: "Discard: \(outcome.effect).")
            case .failure(let error) where error.code == .invalidArgument:
                flash = .init(kind: "error", text: "Discard refused: \(error.message). Nothing was changed.")
            case .failure(let error):
                throw error
            }
        }
        sessions.setFlash(session.id, flash)
        return Self.redirect(back)
    }

    private func waitingOnProvider(_ page: ConsolePage) async throws -> HTTPResponse {
        ConsolePages.waitingOnProvider(page, items: try await ProviderSweep.waiting(limit: 500, on: reads.pool),
                                       checking: try await reads.providerChecks(limit: 200))
    }

    /// `payhook charges resolve` from the "waiting on a human" list: the same operation, audited
    /// as the operator; a refusal (no note, a success without the payment id) changes nothing.
    private func chargeResolve(_ context: Context, session: ConsoleSessions.Session, id: Int64) async throws -> HTTPResponse {
        let back = "/console/waiting/human"
        guard let resolution = ChargeOperations.Resolution(rawValue: context.form["as"] ?? "") else {
            sessions.setFlash(session.id, .init(kind: "error", text: "Resolve refused: choose succeeded or failed. Nothing was changed."))
            return Self.redirect(back)
        }
        let action = operatorAction(context, session: session, note: note(context))
        let paymentID = context.form["provider_payment_id"].flatMap { $0.isEmpty ? nil : $0 }
        let result = await Result(catching: { () async throws(OperationsError) in
            try await charges.resolve(id: id, as: resolution, providerPaymentID: paymentID, by: action)
        })
        let flash: ConsoleSessions.Flash
        switch result {
        case .success(let outcome):
            flash = .init(kind: "ok", text: "Charge \(id): \(outcome.effect).")
        case .failure(let error) where error.code == .invalidArgument || error.code == .conflict:
            flash = .init(kind: "error", text: "Resolve refused: \(error.message). Nothing was changed.")
        case .failure(let error):
            throw error
        }
        sessions.setFlash(session.id, flash)
        return Self.redirect(back)
    }

    private func bulkReplayRequest(_ context: Context, session: ConsoleSessions.Session) async throws -> HTTPResponse {
        let query = try ConsolePages.letterQuery(context.form)
        let back = "/console/dead-letters?" + ConsolePages.filterQueryString(context.form)
        guard let note = note(context) else {
            sessions.setFlash(session.id, .init(kind: "error", text: "Bulk replay refused: say why in the note. Nothing was changed."))
            return Self.redirect(back)
        }
        let rate = Double(context.form["rate"] ?? "").flatMap { $0 > 0 ? min($0, ConsoleBulkReplay.maxRate) : nil } ?? ConsoleBulkReplay.defaultRate
        let ids: [Int64]
        if context.form["scope"] == "all" {
            ids = try await reads.openLetterIDs(query)
        } else {
            // Ticked rows; one no longer open is left alone by replay itself.
            ids = Set(context.formPairs.filter { $0.0 == "id" }.compactMap { Int64($0.1) }).sorted()
            guard !ids.isEmpty else {
                sessions.setFlash(session.id, .init(kind: "error", text: "Tick the letters to replay, or choose all matching the filter. Nothing was changed."))
                return Self.redirect(back)
            }
        }
        let action = OperatorAction(actor: session.actor, actorNote: session.actorNote, note: note,
                                    context: Self.details(session, context) + [.init("bulk_filter", query.filter.json)])
        let started = bulkReplay.start(ids: ids, rate: rate, action: action, operations: deadLetters)
        let text = started
            ? "Replaying \(ids.count) letter(s) at \(Self.format(rate))/s; each is audited. This page shows the progress."
            : "A bulk replay is already running in this process; wait for it to finish. Nothing new was started."
        sessions.setFlash(session.id, .init(kind: started ? "ok" : "error", text: text))
        return Self.redirect(back)
    }

    private func subscriptionAction(_ context: Context, session: ConsoleSessions.Session, id: Int64, action: String) async throws -> HTTPResponse {
        let operatorAction = operatorAction(context, session: session, note: note(context))
        let flash: ConsoleSessions.Flash
        let result: Result<SubscriptionOperations.Outcome, OperationsError>
        switch action {
        case "cancel": result = await Result(catching: { () async throws(OperationsError) in try await subscriptions.cancel(id: id, by: operatorAction) })
        case "pause": result = await Result(catching: { () async throws(OperationsError) in try await subscriptions.pause(id: id, by: operatorAction) })
        default: result = await Result(catching: { () async throws(OperationsError) in try await subscriptions.resume(id: id, by: operatorAction) })
        }
        switch result {
        case .success(let outcome):
            flash = outcome.changed
                ? .init(kind: "ok", text: "Subscription \(id) is now \(outcome.subscription.status.rawValue).")
                : .init(kind: "info", text: "Subscription \(id) was already \(outcome.subscription.status.rawValue); nothing changed.")
        case .failure(let error) where error.code == .conflict || error.code == .invalidArgument:
            flash = .init(kind: "error", text: "\(action.capitalized) refused: \(error.message)")
        case .failure(let error):
            throw error
        }
        sessions.setFlash(session.id, flash)
        return Self.redirect("/console/subscriptions/\(id)")
    }

    // MARK: HTTP helpers

    static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(rate)
    }

    static func cookies(_ request: HTTPRequest) -> [String: String] {
        var cookies: [String: String] = [:]
        for header in request.headers where header.name == "cookie" {
            for pair in header.value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                if cookies[name] == nil { cookies[name] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        return cookies
    }

    static func cookie(_ name: String, _ value: String, maxAge: Int, secure: Bool) -> String {
        "\(name)=\(value); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// 303: the browser follows with a GET, so reloading the next page never re-posts a form.
    static func redirect(_ location: String, cookies: [String] = []) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location), ("Content-Type", "text/plain; charset=utf-8")]
                        + cookies.map { ("Set-Cookie", $0) },
                     body: Array("see \(location)\n".utf8))
    }
}

/// Where the console reads the admin credentials accepted at this moment: a request reads them
/// once at its start, so a reload never changes the answer of a request under way.
package protocol AdminCredentialSource: Sendable {
    var credentials: AdminCredentials { get }
}

extension Result where Failure == OperationsError {
    /// Captures an async throwing call's outcome, so a refusal can be shown rather than thrown.
    init(catching body: () async throws(OperationsError) -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
