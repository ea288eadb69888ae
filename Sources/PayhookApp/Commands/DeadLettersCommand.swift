import Foundation
import PayhookCore
import PayhookPostgres
import PayhookAdmin
import PayhookOperations

/// `payhook dead-letters list | show | replay | discard`: the on-call engineer's view of work
/// that exhausted its retries. Every change goes through `DeadLetterOperations`, the same code
/// the admin API runs.
///
/// Replay is a dry run unless `--execute` is given: at 3 a.m. the safe command is the default.
struct DeadLettersCommand: CommandGroup {
    static let usage = """
        usage: payhook dead-letters <list|show|replay|discard> [options]

          list [--provider P] [--source inbound_event|job] [--since 2h|30m|7d|ISO-TIME] [--reason TEXT]
               [--status open|replayed|discarded] [--limit N] [--json]
                                    letters, newest first (default: open ones, at most 100)
          show ID [--json]          the letter, its error history, the raw delivery or job payload,
                                    and what a replay would do
          replay ID... | --all [list filters] [--execute --note TEXT] [--rate N/s] [--actor NAME] [--json]
                                    DRY RUN unless --execute: puts the work back in its queue
                                    (attempts reset, history kept), throttled (default 50/s),
                                    and marks the letters replayed; replaying twice changes nothing;
                                    --execute needs a note saying what was fixed
          discard ID... --note TEXT [--actor NAME] [--json]
                                    marks letters discarded (the work stays failed); needs a note

        Executed actions are written to audit_log with the actor (--actor, else $USER, else the
        operating-system account).

        """

    static let missingSubcommand = "dead-letters needs a subcommand"

    /// The options that select letters: `list`'s, and `replay --all`'s.
    static let filterOptions: Set<String> = ["--provider", "--source", "--since", "--reason", "--status", "--limit"]

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        switch subcommand {
        case "list":
            guard let parsed = parse(rest, options: Self.filterOptions, flags: ["--json"]) else { return 2 }
            guard parsed.positionals.isEmpty else { return usageError("list takes no ids (use show ID)") }
            guard var filter = filter(from: parsed) else { return 2 }
            if filter.limit == nil { filter.limit = 100 }
            return await withOperations { operations in
                let letters = try await operations.list(filter)
                printResult(parsed, json: .array(letters.map(\.json)), text: Self.table(letters))
                return 0
            }
        case "show":
            guard let parsed = parse(rest, options: [], flags: ["--json"]) else { return 2 }
            guard let id = onlyID(parsed, else: "show needs exactly one dead letter id") else { return 2 }
            return await withOperations { operations in
                let detail = try await operations.detail(id: id)
                printResult(parsed, json: detail.json, text: Self.describe(detail))
                return 0
            }
        case "replay":
            return await replay(rest)
        case "discard":
            return await discard(rest)
        default:
            return usageError("unknown dead-letters subcommand: \(subcommand)")
        }
    }

    // MARK: replay and discard

    private func replay(_ arguments: ArraySlice<String>) async -> Int32 {
        guard let parsed = parse(arguments, options: Self.filterOptions.union(["--rate", "--note", "--actor"]),
                                 flags: ["--json", "--execute", "--all"]) else { return 2 }
        let all = parsed.flags.contains("--all")
        guard all != !parsed.positionals.isEmpty else {
            return usageError("replay needs dead letter ids or --all with filters, not both")
        }
        guard let ids = ids(parsed.positionals) else { return 2 }
        guard var filter = filter(from: parsed) else { return 2 }
        if !all, !Set(parsed.values.keys).isDisjoint(with: Self.filterOptions) {
            return usageError("filters (--provider, --since, …) only apply with --all")
        }
        guard filter.status == .open else { return usageError("replay --all only replays open letters; drop --status") }
        if parsed.values["--limit"] == nil { filter.limit = nil }
        let rate: Double
        if let text = parsed.values["--rate"] {
            guard let value = Double(text.hasSuffix("/s") ? String(text.dropLast(2)) : text), value > 0, value <= 10_000 else {
                return usageError("--rate expects a number of letters per second, e.g. --rate 20/s")
            }
            rate = value
        } else {
            rate = 50
        }
        guard let actor = actorIfExecuting(parsed) else { return 2 }
        let execute = parsed.flags.contains("--execute")
        if execute, (parsed.values["--note"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return usageError("replay --execute needs --note TEXT saying what was fixed")
        }
        let json = parsed.flags.contains("--json")
        return await withOperations { operations in
            let letters = all ? try await operations.matching(filter) : try await operations.letters(ids: ids)
            let open = letters.filter { $0.status == .open }
            guard execute else {
                if json {
                    output.print(JSONOutput.object([
                        .init("dry_run", .bool(true)), .init("would_replay", .int(Int64(open.count))),
                        .init("letters", .array(letters.map { letter in
                            .object([.init("dead_letter", letter.json), .init("replay_would", .string(Self.plan(letter)))])
                        })),
                    ]).rendered)
                } else {
                    output.print("DRY RUN: would replay \(open.count) dead letter(s); nothing was changed.")
                    for letter in letters { output.print("  \(letter.id)  \(letter.source.rawValue) \(letter.sourceID)  \(Self.plan(letter))") }
                    if !open.isEmpty { output.print("Run again with --execute to replay them (at most \(Self.format(rate))/s).") }
                }
                return 0
            }
            let action = operatorAction(actor: actor, note: parsed.values["--note"], arguments: Array(arguments),
                                        context: all ? [.init("filter", filter.json)] : [])
            var outcomes: [JSONOutput] = []
            var replayed = 0
            var failed = 0
            let clock = ContinuousClock()
            let start = clock.now
            for (index, letter) in letters.enumerated() {
                // Throttled so that a mass replay cannot swamp the processors or a provider API.
                try? await clock.sleep(until: start + .seconds(Double(index) / rate))
                do {
                    let outcome = try await operations.replay(id: letter.id, by: action)
                    if outcome.changed { replayed += 1 }
                    outcomes.append(outcome.json)
                    if !json {
                        output.print(outcome.changed ? "replayed \(letter.id): \(outcome.effect)" : "\(letter.id): \(outcome.effect)")
                    }
                } catch {
                    let failure = OperationsError.wrapping(error)
                    failed += 1
                    outcomes.append(.object([.init("id", .int(letter.id)), .init("error", failure.json)]))
                    if !json { output.printError("payhook: dead letter \(letter.id): \(failure.message)") }
                    if failure.code == .databaseUnavailable { break }
                }
            }
            if json {
                output.print(JSONOutput.object([
                    .init("dry_run", .bool(false)), .init("replayed", .int(Int64(replayed))),
                    .init("failed", .int(Int64(failed))), .init("results", .array(outcomes)),
                ]).rendered)
            } else {
                output.print("replayed \(replayed) of \(letters.count) dead letter(s)" + (failed > 0 ? ", \(failed) failed" : ""))
            }
            return failed > 0 ? 1 : 0
        }
    }

    private func discard(_ arguments: ArraySlice<String>) async -> Int32 {
        guard let parsed = parse(arguments, options: ["--note", "--actor"], flags: ["--json"]) else { return 2 }
        guard !parsed.positionals.isEmpty else { return usageError("discard needs dead letter ids") }
        guard let ids = ids(parsed.positionals) else { return 2 }
        guard let note = parsed.values["--note"], !note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            return usageError("discard needs --note TEXT saying why the work is abandoned")
        }
        guard let actor = actor(parsed) else { return 2 }
        let json = parsed.flags.contains("--json")
        return await withOperations { operations in
            let letters = try await operations.letters(ids: ids)
            let action = operatorAction(actor: actor, note: note, arguments: Array(arguments))
            var outcomes: [JSONOutput] = []
            var discarded = 0
            for letter in letters {
                let outcome = try await operations.discard(id: letter.id, by: action)
                if outcome.changed { discarded += 1 }
                outcomes.append(outcome.json)
                if !json { output.print(outcome.changed ? "discarded \(letter.id): \(outcome.effect)" : "\(letter.id): \(outcome.effect)") }
            }
            if json {
                output.print(JSONOutput.object([.init("discarded", .int(Int64(discarded))), .init("results", .array(outcomes))]).rendered)
            } else {
                output.print("discarded \(discarded) of \(letters.count) dead letter(s)")
            }
            return 0
        }
    }

    /// What replaying this letter would do, judged from the letter alone (`show` checks the work row).
    static func plan(_ letter: DeadLetter) -> String {
        guard letter.status == .open else { return "already \(letter.status.rawValue); nothing to do" }
        return switch letter.source {
        case .inboundEvent: "set inbound event \(letter.sourceID) back to pending (attempts 0, due now)"
        case .job: "set job \(letter.sourceID) available (attempt 0, run now)"
        }
    }

    // MARK: output

    static func table(_ letters: [DeadLetter]) -> String {
        let header = ["ID", "SOURCE", "SOURCE_ID", "PROVIDER", "STATUS", "CREATED", "REASON: ERROR"]
        let rows = letters.map { letter in
            [String(letter.id), letter.source.rawValue, String(letter.sourceID), letter.provider ?? "-", letter.status.rawValue,
             JSONOutput.format(letter.createdAt),
             clip(letter.reason + (letter.error.map { ": " + $0 } ?? ""), 90)]
        }
        return TextTable.listing(header: header, rows: rows, counting: "dead letter", none: "no dead letters match")
    }

    static func describe(_ detail: DeadLetterDetail) -> String {
        let letter = detail.letter
        var out = "dead letter \(letter.id) (\(letter.status.rawValue))\n"
        out += "  source      \(letter.source.rawValue) \(letter.sourceID)\n"
        out += "  provider    \(letter.provider ?? "-")\n"
        out += "  reason      \(letter.reason)\n"
        out += "  error       \(oneLine(letter.error ?? "-"))\n"
        out += "  created     \(JSONOutput.format(letter.createdAt))\n"
        if let resolvedAt = letter.resolvedAt {
            out += "  resolved    \(JSONOutput.format(resolvedAt)) by \(letter.resolvedBy ?? "?")\n"
        }
        if let note = letter.note { out += "  note        \(oneLine(note))\n" }
        switch detail.subject {
        case .inboundEvent(let event):
            out += "inbound event \(event.id)\n"
            out += "  status      \(event.status), attempts \(event.attempts), next attempt \(JSONOutput.format(event.nextAttemptAt))\n"
            out += "  last error  \(oneLine(event.lastError ?? "-"))\n"
            out += "  received    \(JSONOutput.format(event.receivedAt)) from \(event.remoteAddress ?? "?")\n"
            out += "  route       \(event.provider)\(event.account.isEmpty ? "" : "/" + event.account)  type \(event.eventType ?? "-")\n"
            out += "  dedup key   \(oneLine(event.dedupKey))\n"
            out += "  query       \(event.query.isEmpty ? "-" : event.query)\n"
            out += "  headers     \(event.headersJSON)\n"
            let body = event.bodyRendering
            out += "  body (\(event.body.count) bytes, \(body.encoding)):\n"
            out += body.text.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n") + "\n"
        case .job(let job):
            out += "job \(job.id) (\(job.kind))\n"
            out += "  state       \(job.state), attempt \(job.attempt) of \(job.maxAttempts), run at \(JSONOutput.format(job.runAt))\n"
            out += "  errors      \(job.errorsJSON)\n"
            out += "  payload     \(job.payloadJSON)\n"
        case .missing:
            out += "\(letter.source.rawValue) \(letter.sourceID): no longer exists\n"
        }
        out += "replay would: \(detail.replayPlan)\n"
        return out
    }

    private static func clip(_ text: String, _ limit: Int) -> String {
        let flat = oneLine(text)
        return flat.count <= limit ? flat : String(flat.prefix(limit - 1)) + "…"
    }

    /// Control characters from stored errors or keys must not move a terminal's cursor.
    private static func oneLine(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : Character($0) })
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    // MARK: arguments and plumbing

    func filter(from parsed: CommandArguments) -> DeadLetterFilter? {
        var filter = DeadLetterFilter()
        if let status = parsed.values["--status"] {
            guard let value = DeadLetter.Status(rawValue: status) else {
                _ = usageError("--status must be open, replayed or discarded"); return nil
            }
            filter.status = value
        }
        if let source = parsed.values["--source"] {
            guard let value = DeadLetter.Source(rawValue: source) else {
                _ = usageError("--source must be inbound_event or job"); return nil
            }
            filter.source = value
        }
        filter.provider = parsed.values["--provider"]
        filter.reason = parsed.values["--reason"]
        if let since = parsed.values["--since"] {
            guard let date = SinceArgument.parse(since) else { _ = usageError("--since: \(SinceArgument.help)"); return nil }
            filter.createdSince = date
        }
        if let limit = parsed.values["--limit"] {
            guard let value = Int(limit), value > 0 else { _ = usageError("--limit must be a positive number"); return nil }
            filter.limit = value
        }
        return filter
    }

    private func ids(_ positionals: [String]) -> [Int64]? {
        var ids: [Int64] = []
        for text in positionals {
            guard let id = Int64(text), id > 0 else { _ = usageError("not a dead letter id: \(text)"); return nil }
            ids.append(id)
        }
        return ids
    }

    /// Runs `body` with the operations on a small pool from the environment. Operations errors
    /// become exit 1 with their message on stderr.
    private func withOperations(_ body: (DeadLetterOperations) async throws -> Int32) async -> Int32 {
        await withDatabase { pool in try await body(DeadLetterOperations(pool: pool)) }
    }
}
