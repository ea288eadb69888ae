/// Who acts on what, and why: the part of every audited action that the caller supplies.
struct OperatorAction: Sendable {
    /// `--actor`, the admin API body's `actor`, or `$USER`.
    let actor: String
    /// The operator's reason; required to discard, optional to replay.
    let note: String?
    /// How the action was asked for (CLI arguments, admin API route), stored in `audit_log.details`.
    let context: [JSONDocument.Member]

    init(actor: String, note: String? = nil, context: [JSONDocument.Member] = []) {
        self.actor = actor
        self.note = note
        self.context = context
    }
}

/// The result of replaying or discarding one letter.
struct ResolutionOutcome: Sendable {
    /// The letter after the call.
    let letter: DeadLetter
    /// False when the letter was not open: nothing was written (idempotent).
    let changed: Bool
    /// What happened to the work, in words.
    let effect: String

    var json: JSONDocument {
        .object([.init("dead_letter", letter.json), .init("changed", .bool(changed)), .init("effect", .string(effect))])
    }
}
