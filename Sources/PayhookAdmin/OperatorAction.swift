package import PayhookCore

/// Who acts on what, and why: the part of every audited action that the caller supplies.
package struct OperatorAction: Sendable {
    /// Who is authenticated: the admin credential's name, or the operating-system account of
    /// the CLI. `audit_log.actor`.
    package let actor: String
    /// A name the caller gave, not checked (`--actor`, the name typed at console sign-in, the
    /// admin API body's `actor`): shown beside the actor, never instead of it. `audit_log.actor_note`.
    package let actorNote: String?
    /// The operator's reason; required to discard, optional to replay.
    package let note: String?
    /// How the action was asked for (CLI arguments, admin API route), stored in `audit_log.details`.
    package let context: [JSONOutput.Member]

    package init(actor: String, actorNote: String? = nil, note: String? = nil, context: [JSONOutput.Member] = []) {
        self.actor = actor
        self.actorNote = actorNote
        self.note = note
        self.context = context
    }
}

extension OperatorAction {
    /// The optional JSON body of an operator action on the admin API (replay, discard, cancel,
    /// pause, resume): `{"note": "…", "actor": "…"}`, both optional, nothing else allowed.
    package static func parseBody(_ body: [UInt8]) throws(OperationsError) -> (note: String?, actor: String?) {
        guard !AdminBody.isBlank(body) else { return (nil, nil) }
        guard let object = AdminBody.object(body) else {
            throw .invalid("body", "the body must be a JSON object such as {\"note\": \"…\", \"actor\": \"…\"}")
        }
        for key in object.keys.sorted() where key != "note" && key != "actor" {
            throw .invalid(key, "unknown field \(key); known: note, actor")
        }
        func text(_ key: String) throws(OperationsError) -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let text)? where !text.isEmpty: return text
            default: throw .invalid(key, "\(key) must be a non-empty string")
            }
        }
        return (try text("note"), try text("actor"))
    }
}
