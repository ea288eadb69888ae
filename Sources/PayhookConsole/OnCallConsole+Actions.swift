import Foundation
import PayhookAdmin
import PayhookHTTP
import PayhookOperations
import PayhookSubscriptions

/// The console's POST actions on dead letters (dry run, replay, discard, bulk replay), charges
/// (resolve) and subscriptions (cancel, pause, resume): each runs the same operation as the CLI
/// and the JSON API, audited as the signed-in operator, and answers with a redirect whose
/// message waits for the page the browser lands on. A refusal is shown there, not thrown.
extension OnCallConsole {
    private func operatorAction(_ context: Context, session: ConsoleSessions.Session, note: String?) -> OperatorAction {
        OperatorAction(actor: session.actor, actorNote: session.actorNote, note: note, context: Self.details(session, context))
    }

    private func note(_ context: Context) -> String? {
        let text = (context.form["note"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    func letterAction(_ context: Context, session: ConsoleSessions.Session, id: Int64, action: String) async throws -> HTTPResponse {
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

    /// `payhook charges resolve` from the "waiting on a human" list: the same operation, audited
    /// as the operator; a refusal (no note, a success without the payment id) changes nothing.
    func chargeResolve(_ context: Context, session: ConsoleSessions.Session, id: Int64) async throws -> HTTPResponse {
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

    func bulkReplayRequest(_ context: Context, session: ConsoleSessions.Session) async throws -> HTTPResponse {
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

    func subscriptionAction(_ context: Context, session: ConsoleSessions.Session, id: Int64, action: String) async throws -> HTTPResponse {
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
