import Foundation
package import PayhookAdmin
import PayhookCore
import PayhookCrypto
package import PayhookHTTP
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
///
/// This file holds the entry (the route-table entry, parsing a request, the session and CSRF
/// checks), sign-in and the HTTP helpers; the page dispatch is in `OnCallConsole+Pages.swift`,
/// the POST actions on letters, charges and subscriptions in `OnCallConsole+Actions.swift`.
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

    // MARK: sign-in

    private func signInPage(_ context: Context, error: String?, status: Int = 200) -> HTTPResponse {
        let token = ConsoleSessions.randomToken()
        var response = ConsolePages.signIn(csrf: token, error: error, status: status)
        response.headers.append(("Set-Cookie", Self.cookie(Self.signInCookie, token, maxAge: 1800, secure: context.secure)))
        return response
    }

    /// One console session event in the audit trail, with where the browser connected from.
    func audit(_ action: String, session: ConsoleSessions.Session, _ context: Context) async throws {
        try await reads.pool.withConnection { connection in
            try await AuditTrail.record(on: connection, actor: session.actor, actorNote: session.actorNote, action: action,
                                        target: "console", details: Self.details(session, context))
        }
    }

    /// Where an action came from: the console, the browser's address and, when a proxy named
    /// the person, the credential they signed in with.
    static func details(_ session: ConsoleSessions.Session, _ context: Context) -> [JSONOutput.Member] {
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

// In an extension, so that Swift still synthesizes the memberwise initializer it calls.
extension OnCallConsole {
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
}

/// Where the console reads the admin credentials accepted at this moment: a request reads them
/// once at its start, so a reload never changes the answer of a request under way.
package protocol AdminCredentialSource: Sendable {
    var credentials: AdminCredentials { get }
}
