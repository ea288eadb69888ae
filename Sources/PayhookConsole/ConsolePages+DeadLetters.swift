import Foundation
import PayhookAdmin
import PayhookHTTP
import PayhookOperations
import PayhookProcessing
import PayhookSubscriptions

extension ConsolePages {
    /// At most `limit` characters, with an ellipsis when cut; the full text is one click away.
    static func shortened(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    static func urlEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static let filterFields = ["status", "source", "provider", "reason", "since", "until"]

    /// The list's filter from query or form fields. `status` defaults to open; `all` lifts it.
    static func letterQuery(_ fields: [String: String]) throws(OperationsError) -> ConsoleReads.LetterQuery {
        var query = ConsoleReads.LetterQuery()
        func value(_ name: String) -> String? {
            guard let text = fields[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        switch value("status") {
        case nil: query.filter.status = .open
        case "all"?: query.filter.status = nil
        case let text?:
            guard let status = DeadLetter.Status(rawValue: text) else { throw .invalid("status", "status must be open, replayed, discarded or all") }
            query.filter.status = status
        }
        if let text = value("source") {
            guard let source = DeadLetter.Source(rawValue: text) else { throw .invalid("source", "source must be inbound_event or job") }
            query.filter.source = source
        }
        query.filter.provider = value("provider")
        query.filter.reason = value("reason")
        if let text = value("since") {
            guard let since = SinceArgument.parse(text) else { throw .invalid("since", "since: \(SinceArgument.help)") }
            query.filter.createdSince = since
        }
        if let text = value("until") {
            guard let until = SinceArgument.parse(text) else { throw .invalid("until", "until: \(SinceArgument.help)") }
            query.createdBefore = until
        }
        return query
    }

    static func filterQueryString(_ fields: [String: String]) -> String {
        filterFields.compactMap { name in
            guard let value = fields[name], !value.isEmpty else { return nil }
            return "\(name)=\(urlEncode(value))"
        }.joined(separator: "&")
    }

    static func deadLetters(_ page: ConsolePage, query fields: [String: String], reads: ConsoleReads,
                            bulk: ConsoleBulkReplay.Progress?) async throws -> HTTPResponse {
        let query = try letterQuery(fields)
        let before = try fields["before"].flatMap { $0.isEmpty ? nil : $0 }.map { text throws(OperationsError) in
            try AdminRequest.pathID(text, of: "page")
        }
        let result = try await reads.letterPage(query, before: before, size: 50)
        let now = Date()
        func option(_ value: String, _ label: String, _ current: String?) -> HTML {
            "<option value=\"\(value)\"\(current == value ? " selected" as HTML : "")>\(label)</option>"
        }
        let status = fields["status"].flatMap { $0.isEmpty ? nil : $0 } ?? "open"
        let source = fields["source"] ?? ""
        let filters: HTML = """
            <form class="filters" method="get" action="/console/dead-letters">
            <label>Status<select name="status">\(option("open", "open", status))\(option("replayed", "replayed", status))\(option("discarded", "discarded", status))\(option("all", "any", status))</select></label>
            <label>Source<select name="source">\(option("", "any", source))\(option("inbound_event", "inbound event", source))\(option("job", "job", source))</select></label>
            <label>Provider<input type="text" name="provider" size="11" value="\(fields["provider"] ?? "")"></label>
            <label>Reason contains<input type="text" name="reason" size="18" value="\(fields["reason"] ?? "")"></label>
            <label>Since<input type="text" name="since" size="12" placeholder="2h, 7d, ISO time" value="\(fields["since"] ?? "")"></label>
            <label>Until<input type="text" name="until" size="12" placeholder="30m, ISO time" value="\(fields["until"] ?? "")"></label>
            <button type="submit">Filter</button> <a href="/console/dead-letters">reset</a>
            </form>
            """
        let rows = result.letters.map { letter -> [HTML] in
            // The checkboxes belong to the bulk form below through its id (forms cannot nest).
            [letter.status == .open
                ? "<input type=\"checkbox\" name=\"id\" value=\"\(letter.id)\" form=\"bulk-replay\" aria-label=\"select letter \(letter.id)\">"
                : "",
             "<a href=\"/console/dead-letters/\(letter.id)\">\(letter.id)</a>", badge(letter.status.rawValue),
             "\(letter.source.rawValue) \(letter.sourceID)", HTML.text(letter.provider), "\(letter.reason)",
             "<span title=\"\(letter.error ?? "")\">\(Self.shortened(letter.error ?? "", to: 160))</span>", HTML.time(letter.createdAt, now: now)]
        }
        let filterString = filterQueryString(fields)
        let next: HTML = result.nextBefore.map { "<a href=\"/console/dead-letters?\(filterString)\(filterString.isEmpty ? "" : "&")before=\($0)\">Older →</a>" } ?? ""
        let first: HTML = before == nil ? "" : "<a href=\"/console/dead-letters?\(filterString)\">← Newest</a>"
        let progress: HTML = bulk.map { run in
            let state: HTML = run.running ? "running" : "finished"
            return "<div class=\"flash info\">Bulk replay by \(run.actor) \(state): \(run.done) of \(run.total) done\(run.failed > 0 ? ", \(run.failed) failed and stay open" as HTML : "").</div>"
        } ?? ""
        let hidden = filterFields.map { name -> HTML in
            "<input type=\"hidden\" name=\"\(name)\" value=\"\(fields[name] ?? "")\">"
        }
        let bulkForm: HTML = result.total == 0 || query.filter.status == .replayed || query.filter.status == .discarded ? "" : """
            <div class="card"><h2>Replay open letters</h2>
            <form id="bulk-replay" method="post" action="/console/dead-letters/replay">\(page.csrfField)\(hidden)
            <p><label><input type="radio" name="scope" value="selected" checked> the letters ticked above</label>
            <label><input type="radio" name="scope" value="all"> all \(result.total) letter(s) matching the filter, on every page</label></p>
            <p class="muted">Open ones only, oldest first, throttled like <code>dead-letters replay --all --rate</code>; each is audited.</p>
            <label>Note (required)<textarea name="note" placeholder="why these can be replayed now"></textarea></label>
            <label>Rate, letters per second <input type="text" name="rate" size="4" value="\(OnCallConsole.format(ConsoleBulkReplay.defaultRate))"></label>
            <button class="primary" type="submit">Replay</button>
            </form></div>
            """
        let body: HTML = """
            <h1>Dead letters</h1>\(progress)
            <div class="card">\(filters)</div>
            <div class="card"><p class="muted">\(result.total) letter(s) match; newest first.</p>
            \(table(["", "id", "status", "work", "provider", "reason", "error", "created"], rows, empty: "No dead letters match this filter."))
            <div class="pager">\(first)\(next)</div></div>
            \(bulkForm)
            """
        return page.render(title: "Dead letters", nav: "dead-letters", body: body)
    }

    static func deadLetter(_ page: ConsolePage, id: Int64, operations: DeadLetterOperations, reads: ConsoleReads) async throws -> HTTPResponse {
        let detail = try await operations.detail(id: id)
        let audit = try await reads.audit(target: "dead_letter:\(id)")
        let letter = detail.letter
        let now = Date()
        let summary = facts([
            ("status", badge(letter.status.rawValue)), ("work", "\(letter.source.rawValue) \(letter.sourceID)"),
            ("provider", HTML.text(letter.provider)), ("reason", "\(letter.reason)"),
            ("created", HTML.time(letter.createdAt, now: now)),
            ("resolved", letter.resolvedAt.map { "\(HTML.time($0, now: now)) by \(letter.resolvedBy ?? "?")" } ?? HTML.text(nil)),
            ("note", HTML.text(letter.note)),
        ])
        let subject: HTML
        switch detail.subject {
        case .inboundEvent(let event):
            let rendered = event.bodyRendering
            let bodyHTML: HTML = rendered.encoding == "utf8" ? HTML.prettyJSON(rendered.text) : "<pre class=\"raw\">\(rendered.text)</pre>"
            subject = """
                <div class="card"><h2>Delivery \(event.id)</h2>\(facts([
                    ("provider", "\(event.provider)\(event.account.isEmpty ? "" : " / " + event.account)"),
                    ("event type", HTML.text(event.eventType)), ("dedup key", "<code>\(event.dedupKey)</code>"),
                    ("received", HTML.time(event.receivedAt, now: now)), ("from", HTML.text(event.remoteAddress)),
                    ("status", badge(event.status)), ("attempts", "\(event.attempts)"),
                    ("next attempt", HTML.time(event.nextAttemptAt, now: now)), ("processed", HTML.time(event.processedAt, now: now)),
                    ("query", HTML.text(event.query)),
                ]))
                <h2>Error history</h2><pre class="raw">\(event.lastError ?? letter.error ?? "none recorded")</pre>
                <h2>Headers</h2>\(HTML.prettyJSON(event.headersJSON))
                <h2>Body <span class="muted">(\(event.body.count) bytes, \(rendered.encoding))</span></h2>\(bodyHTML)</div>
                """
        case .job(let job):
            subject = """
                <div class="card"><h2>Job \(job.id) (\(job.kind))</h2>\(facts([
                    ("state", badge(job.state)), ("attempt", "\(job.attempt) of \(job.maxAttempts)"),
                    ("created", HTML.time(job.createdAt, now: now)), ("run at", HTML.time(job.runAt, now: now)),
                    ("finalized", HTML.time(job.finalizedAt, now: now)),
                ]))
                <h2>Error history</h2>\(HTML.prettyJSON(job.errorsJSON))
                <h2>Payload</h2>\(HTML.prettyJSON(job.payloadJSON))</div>
                """
        case .missing:
            subject = "<div class=\"card\"><h2>Work</h2><p>The \(letter.source.rawValue) \(letter.sourceID) no longer exists.</p></div>"
        }
        let base = "/console/dead-letters/\(id)"
        let actions: HTML = letter.status != .open ? "<p class=\"muted\">This letter is \(letter.status.rawValue); there is nothing left to do.</p>" : """
            <div class="actions">
            <form method="post" action="\(base)/dry-run">\(page.csrfField)
              <p>Shows what a replay would do; changes nothing.</p><button type="submit">Dry run</button></form>
            <form method="post" action="\(base)/replay">\(page.csrfField)
              <p>Puts the work back in its queue and marks the letter replayed.</p>
              <label>Note (required)<textarea name="note" placeholder="why it can be replayed now"></textarea></label>
              <button class="primary" type="submit">Replay</button></form>
            <form method="post" action="\(base)/discard">\(page.csrfField)
              <p>Leaves the work failed and closes the letter.</p>
              <label>Note (required)<textarea name="note" placeholder="why nobody should replay it"></textarea></label>
              <button class="danger" type="submit">Discard</button></form>
            </div>
            """
        let auditRows = audit.map { entry -> [HTML] in
            [HTML.time(entry.at, now: now), "\(entry.actor)", "\(entry.action)", "<div class=\"audit-details\">\(HTML.prettyJSON(entry.detailsJSON))</div>"]
        }
        let body: HTML = """
            <h1>Dead letter \(id)</h1>
            <div class="grid"><div class="card">\(summary)</div>
            <div class="card"><h2>Error</h2><pre class="raw">\(letter.error ?? "none recorded")</pre>
            <h2>What a replay would do</h2><p id="replay-plan">\(detail.replayPlan)</p></div></div>
            <div class="card"><h2>Actions</h2>\(actions)</div>
            \(subject)
            <div class="card"><h2>Audit</h2>\(table(["when", "actor", "action", "details"], auditRows, empty: "No operator has acted on this letter."))</div>
            """
        return page.render(title: "Dead letter \(id)", nav: "dead-letters", body: body)
    }
}
