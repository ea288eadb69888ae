import Foundation
import PayhookAdmin
import PayhookHTTP
import PayhookOperations
import PayhookProcessing
import PayhookSubscriptions

/// The frame every signed-in page shares: navigation, search box, operator name, sign-out
/// form (with the CSRF token) and the one-shot message left by the last action.
struct ConsolePage: Sendable {
    let session: ConsoleSessions.Session
    let flash: ConsoleSessions.Flash?

    static let navigation: [(key: String, label: String, href: String)] = [
        ("overview", "Overview", "/console"),
        ("dead-letters", "Dead letters", "/console/dead-letters"),
        ("subscriptions", "Subscriptions", "/console/subscriptions"),
        ("waiting", "Waiting", "/console/waiting/provider"),
    ]

    /// The hidden field every state-changing form carries.
    var csrfField: HTML { "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrfToken)\">" }

    func render(status: Int = 200, title: String, nav: String, body: HTML, searchText: String = "", autoRefresh: Bool = false) -> HTTPResponse {
        let links = Self.navigation.map { item -> HTML in
            "<a href=\"\(item.href)\"\(item.key == nav ? " class=\"current\" aria-current=\"page\"" as HTML : "")>\(item.label)</a>"
        }
        let message: HTML = flash.map { "<div class=\"flash \($0.kind)\" role=\"status\">\($0.text)</div>" } ?? ""
        let document: HTML = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · payhook console</title>
            <link rel="stylesheet" href="/console/console.css"><link rel="icon" href="/console/icon.svg"><script src="/console/console.js" defer></script></head>
            <body\(autoRefresh ? " data-refresh=\"30\"" as HTML : "")>
            <header class="top"><a class="brand" href="/console">payhook</a><nav>\(links)</nav>
            <form method="get" action="/console/search" role="search"><input type="search" name="q" value="\(searchText)"
              placeholder="Search ids, references, keys  ( / )" aria-label="Search"></form>
            <span class="who">signed in as \(session.actor)\(session.actorNote.map { " (\($0))" } ?? "")</span>
            <form method="post" action="/console/sign-out">\(csrfField)<button type="submit">Sign out</button></form>
            </header>
            <main>\(message)\(body)</main></body></html>
            """
        return ConsolePages.html(status, document)
    }
}

/// The console's pages, one function each; SQL lives in the operations they call, never here.
enum ConsolePages {
    static func html(_ status: Int, _ document: HTML) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(document.rendered.utf8))
    }

    static func signIn(csrf: String, error: String?, status: Int) -> HTTPResponse {
        let message: HTML = error.map { "<div class=\"flash error\" role=\"alert\">\($0)</div>" } ?? ""
        return html(status, """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Sign in · payhook console</title><link rel="stylesheet" href="/console/console.css"><link rel="icon" href="/console/icon.svg"></head>
            <body><main class="signin"><div class="card">
            <h1>payhook console</h1>
            \(message)
            <form method="post" action="/console/sign-in">
            <input type="hidden" name="csrf" value="\(csrf)">
            <label for="token">Admin token</label>
            <input id="token" type="password" name="token" autocomplete="current-password" autofocus>
            <label for="name">Your name <span class="muted">(noted beside the credential in the audit log; optional)</span></label>
            <input id="name" type="text" name="name" autocomplete="username" maxlength="64">
            <button class="primary" type="submit">Sign in</button>
            </form></div></main></body></html>
            """)
    }

    static func forbidden(_ message: String) -> HTTPResponse {
        html(403, """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Forbidden · payhook console</title>
            <link rel="stylesheet" href="/console/console.css"><link rel="icon" href="/console/icon.svg"></head>
            <body><main class="signin"><div class="card"><h1>403 Forbidden</h1><p>\(message)</p>
            <p><a href="/console">Back to the console</a></p></div></main></body></html>
            """)
    }

    static func errorBody(_ error: OperationsError) -> HTML {
        "<h1>\(error.code == .notFound ? "Not found" : "Something went wrong")</h1><div class=\"flash error\">\(error.message)</div>"
    }

    static func badge(_ text: String, _ kind: String? = nil) -> HTML {
        "<span class=\"badge \(kind ?? text)\">\(text)</span>"
    }

    /// A table from header cells and rows of already-built cells; `numeric` columns align right.
    static func table(_ headers: [String], _ rows: [[HTML]], numeric: Set<Int> = [], empty: String = "Nothing here.") -> HTML {
        guard !rows.isEmpty else { return "<p class=\"muted\">\(empty)</p>" }
        let head = headers.enumerated().map { index, title -> HTML in
            numeric.contains(index) ? "<th class=\"num\">\(title)</th>" : "<th>\(title)</th>"
        }
        let body = rows.map { cells -> HTML in
            let tds = cells.enumerated().map { index, cell -> HTML in
                numeric.contains(index) ? "<td class=\"num\">\(cell)</td>" : "<td>\(cell)</td>"
            }
            return "<tr>\(tds)</tr>"
        }
        return "<table><thead><tr>\(head)</tr></thead><tbody>\(body)</tbody></table>"
    }

    static func facts(_ pairs: [(String, HTML)]) -> HTML {
        "<dl class=\"facts\">\(pairs.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" as HTML })</dl>"
    }
}
