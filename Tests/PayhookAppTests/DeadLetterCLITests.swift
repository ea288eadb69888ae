import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// `payhook dead-letters` and `payhook inbound reprocess` as an on-call engineer runs them: the
/// command line run in-process against a fresh schema, judged by its output, exit code and the
/// tables.
@Suite("Dead letters on the command line", .timeLimit(.minutes(5)))
struct DeadLetterCLITests {
    @Test("list shows open letters by default and filters by provider, source, reason, status and age")
    func listAndFilter() async throws {
        let database = try await TestDatabase.migrated("dl_list")
        let pxp = try await database.seedDeadInbound(provider: "pxp")
        let adyen = try await database.seedDeadInbound(provider: "adyen", reason: "payload_invalid", error: "adyen payload is not a well-formed JSON object")
        let old = try await database.seedDeadInbound(provider: "adyen", createdAgo: 3 * 86400)
        let job = try await database.seedDeadJob()
        let replayed = try await database.seedDeadInbound(provider: "mercadopago")
        try await database.query("UPDATE dead_letters SET status = 'replayed' WHERE id = $1", [.int(replayed.letter)])
        let env = database.operatorEnvironment

        func ids(_ arguments: [String]) async throws -> [Int64] {
            let result = await PayhookCLI.capture(["dead-letters", "list", "--json"] + arguments, environment: env)
            #expect(result.termination == .exited(0), "\(result.standardError)")
            let array = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]])
            return array.compactMap { ($0["id"] as? NSNumber)?.int64Value }.sorted()
        }
        #expect(try await ids([]) == [pxp.letter, adyen.letter, old.letter, job.letter].sorted())
        #expect(try await ids(["--provider", "adyen"]) == [adyen.letter, old.letter].sorted())
        #expect(try await ids(["--source", "job"]) == [job.letter])
        #expect(try await ids(["--reason", "PAYLOAD"]) == [adyen.letter])
        #expect(try await ids(["--since", "2h"]) == [pxp.letter, adyen.letter, job.letter].sorted())
        #expect(try await ids(["--status", "replayed"]) == [replayed.letter])

        let table = await PayhookCLI.capture(["dead-letters", "list", "--provider", "adyen"], environment: env)
        #expect(table.termination == .exited(0))
        #expect(table.standardOutput.hasPrefix("ID"), "\(table.standardOutput)")
        #expect(table.standardOutput.contains("payload_invalid: adyen payload is not a well-formed JSON object"))
        #expect(table.standardOutput.contains("2 dead letter(s)"))

        let bad = await PayhookCLI.capture(["dead-letters", "list", "--status", "closed"], environment: env)
        #expect(bad.termination == .exited(2))
        #expect(bad.standardError.contains("--status"))
    }

    @Test("show prints the error history, the raw delivery and what replay would do; binary bodies as base64")
    func show() async throws {
        let database = try await TestDatabase.migrated("dl_show")
        let text = try await database.seedDeadInbound(body: Array(#"{"eventCategory":"Transaction","n":1}"#.utf8))
        let binary = try await database.seedDeadInbound(body: [0xff, 0x00, 0x41])
        let job = try await database.seedDeadJob()
        let env = database.operatorEnvironment

        let human = await PayhookCLI.capture(["dead-letters", "show", String(text.letter)], environment: env)
        #expect(human.termination == .exited(0), "\(human.standardError)")
        for expected in ["dead letter \(text.letter) (open)", "status      dead, attempts 8", "last error  fetching pxp transaction failed",
                         #"{"eventCategory":"Transaction","n":1}"#, "query       x=1", "replay would: set inbound event \(text.event) back to pending"] {
            #expect(human.standardOutput.contains(expected), "missing \(expected) in \(human.standardOutput)")
        }

        let json = await PayhookCLI.capture(["dead-letters", "show", String(binary.letter), "--json"], environment: env)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        let event = try #require(object["inbound_event"] as? [String: Any])
        #expect(event["body_encoding"] as? String == "base64")
        #expect(event["body"] as? String == Data([0xff, 0x00, 0x41]).base64EncodedString())
        #expect((event["headers"] as? [String: Any])?["content-type"] as? String == "application/json")
        #expect((object["replay_would"] as? String)?.contains("pending") == true)

        let jobShown = await PayhookCLI.capture(["dead-letters", "show", String(job.letter), "--json"], environment: env)
        let jobObject = try #require(try JSONSerialization.jsonObject(with: Data(jobShown.standardOutput.utf8)) as? [String: Any])
        let jobRow = try #require(jobObject["job"] as? [String: Any])
        #expect((jobRow["errors"] as? [[String: Any]])?.first?["error"] as? String == "callback answered HTTP 500")
        #expect((jobRow["payload"] as? [String: Any])?["order_id"] as? Int == 7)

        let missing = await PayhookCLI.capture(["dead-letters", "show", "999999"], environment: env)
        #expect(missing.termination == .exited(1))
        #expect(missing.standardError.contains("no dead letter with id 999999"))
    }

    @Test("replay without --execute is a dry run: it says how many and changes nothing")
    func dryRun() async throws {
        let database = try await TestDatabase.migrated("dl_dry")
        let first = try await database.seedDeadInbound()
        let second = try await database.seedDeadJob()
        let env = database.operatorEnvironment
        let result = await PayhookCLI.capture(["dead-letters", "replay", "--all"], environment: env)
        #expect(result.termination == .exited(0), "\(result.standardError)")
        #expect(result.standardOutput.contains("DRY RUN: would replay 2 dead letter(s)"), "\(result.standardOutput)")
        let byID = await PayhookCLI.capture(["dead-letters", "replay", String(first.letter), "--json"], environment: env)
        #expect(byID.standardOutput.contains("\"dry_run\":true"))

        #expect(try await database.int("SELECT count(*) AS n FROM dead_letters WHERE status = 'open'") == 2)
        #expect(try await database.string("SELECT status || '/' || attempts AS v FROM inbound_events WHERE id = $1", [.int(first.event)]) == "dead/8")
        #expect(try await database.string("SELECT state || '/' || attempt AS v FROM jobs WHERE id = $1", [.int(second.job)]) == "discarded/5")
        #expect(try await database.int("SELECT count(*) AS n FROM audit_log") == 0)
    }

    @Test("replay --execute puts the event back, a processor then normalizes it, and a second replay changes nothing")
    func executeThenProcessed() async throws {
        let harness = try await ProcessingHarness.make("dl_replay")
        let database = harness.database
        // The provider API times out until it recovers: one attempt allowed, so the event dies.
        harness.pxp.fail("TXREPLAY", with: [ProviderAPIError(.timeout, "no answer")])
        let event = try await harness.insert(.pxp, Bodies.pxpTransaction("TXREPLAY", state: "Captured"))
        let processor = harness.processor(maxAttempts: 1)
        try await harness.drain(processor)
        #expect(try await harness.inbound(event).status == "dead")
        let letter = try await database.int("SELECT id AS n FROM dead_letters WHERE source_id = $1", [.int(event)])

        harness.pxp.setPayment(Bodies.pxpFetched("TXREPLAY", "Captured", .captured))
        let env = database.operatorEnvironment
        let result = await PayhookCLI.capture(
            ["dead-letters", "replay", String(letter), "--execute", "--note", "PXP API recovered", "--actor", "alice"], environment: env)
        #expect(result.termination == .exited(0), "\(result.standardError)")
        #expect(result.standardOutput.contains("replayed \(letter): inbound event \(event) is pending again"), "\(result.standardOutput)")

        let row = try await harness.inbound(event)
        #expect(row.status == "pending" && row.attempts == 0)
        #expect(row.lastError == "fetching pxp transaction failed: timeout: no answer", "history is kept")
        #expect(try await database.string("SELECT status || '/' || resolved_by || '/' || note AS v FROM dead_letters WHERE id = $1",
                                          [.int(letter)]) == "replayed/alice/PXP API recovered")

        // next_attempt_at is the database's now(); move the processor's clock past it.
        harness.clock.advance(by: 60)
        #expect(try await harness.drain(processor).processed == 1)
        #expect(try await harness.inbound(event).status == "processed")
        #expect(try await harness.payment(.pxp, "TXREPLAY")?.status == "captured")
        let events = try await database.int("SELECT count(*) AS n FROM payment_events WHERE inbound_event_id = $1", [.int(event)])

        let noNote = await PayhookCLI.capture(["dead-letters", "replay", String(letter), "--execute", "--actor", "alice"], environment: env)
        #expect(noNote.termination == .exited(2) && noNote.standardError.contains("--note"), "\(noNote.standardError)")
        let again = await PayhookCLI.capture(["dead-letters", "replay", String(letter), "--execute", "--note", "again", "--actor", "alice"],
                                             environment: env)
        #expect(again.termination == .exited(0), "\(again.standardError)")
        #expect(again.standardOutput.contains("\(letter): already replayed; nothing changed"), "\(again.standardOutput)")
        #expect(try await harness.inbound(event).status == "processed", "a second replay does not requeue")
        #expect(try await database.int("SELECT count(*) AS n FROM payment_events WHERE inbound_event_id = $1", [.int(event)]) == events)
        #expect(try await database.int("SELECT count(*) AS n FROM audit_log") == 1, "only the executed change is audited")

        let audit = try #require(try await database.query("SELECT actor, action, target, details::text AS details FROM audit_log").rows.first)
        #expect(try audit.decode("actor", as: String.self) == "alice")
        #expect(try audit.decode("action", as: String.self) == "dead_letter.replay")
        #expect(try audit.decode("target", as: String.self) == "dead_letter:\(letter)")
        let details: String = try audit.decode("details")
        #expect(details.contains("\"--execute\"") && details.contains("PXP API recovered"), "\(details)")
        await harness.pool.close()
    }

    @Test("replay --all --execute requeues jobs too, audited under $USER with the account as a note")
    func replayAllWithJob() async throws {
        let database = try await TestDatabase.migrated("dl_all")
        let inbound = try await database.seedDeadInbound(provider: "adyen")
        let job = try await database.seedDeadJob()
        let untouched = try await database.seedDeadInbound(provider: "pxp")
        let result = await PayhookCLI.capture(["dead-letters", "replay", "--all", "--source", "job", "--execute", "--rate", "100/s", "--note", "API back"],
                                                 environment: database.operatorEnvironment)
        #expect(result.termination == .exited(0), "\(result.standardError)")
        #expect(result.standardOutput.contains("replayed 1 of 1"), "\(result.standardOutput)")
        #expect(try await database.string("SELECT state || '/' || attempt || '/' || jsonb_array_length(errors) AS v FROM jobs WHERE id = $1",
                                          [.int(job.job)]) == "available/0/1")
        #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(inbound.letter)]) == "open")
        #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(untouched.letter)]) == "open")
        #expect(try await database.string("SELECT actor || '/' || coalesce(actor_note, '') AS v FROM audit_log WHERE target = $1",
                                          [.text("dead_letter:\(job.letter)")]) == "oncall-test/os:\(OperatorActorTests.account)")
    }

    @Test("discard needs a note (exit 2, nothing changed); with one it marks the letter discarded and audits it")
    func discard() async throws {
        let database = try await TestDatabase.migrated("dl_discard")
        let seeded = try await database.seedDeadInbound()
        let env = database.operatorEnvironment
        let refused = await PayhookCLI.capture(["dead-letters", "discard", String(seeded.letter)], environment: env)
        #expect(refused.termination == .exited(2))
        #expect(refused.standardError.contains("--note"), "\(refused.standardError)")
        #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(seeded.letter)]) == "open")

        let done = await PayhookCLI.capture(["dead-letters", "discard", String(seeded.letter), "--note", "test delivery from staging"], environment: env)
        #expect(done.termination == .exited(0), "\(done.standardError)")
        #expect(try await database.string("SELECT status || '/' || resolved_by || '/' || note AS v FROM dead_letters WHERE id = $1",
                                          [.int(seeded.letter)]) == "discarded/oncall-test/test delivery from staging")
        #expect(try await database.string("SELECT status AS v FROM inbound_events WHERE id = $1", [.int(seeded.event)]) == "dead")
        #expect(try await database.string("SELECT action AS v FROM audit_log") == "dead_letter.discard")
    }

    @Test("unknown ids are refused with exit 1 naming them, before anything changes")
    func unknownIDs() async throws {
        let database = try await TestDatabase.migrated("dl_unknown")
        let seeded = try await database.seedDeadInbound()
        let result = await PayhookCLI.capture(["dead-letters", "replay", String(seeded.letter), "424242", "--execute", "--note", "x"],
                                                 environment: database.operatorEnvironment)
        #expect(result.termination == .exited(1))
        #expect(result.standardError.contains("no dead letter with id 424242"), "\(result.standardError)")
        #expect(try await database.string("SELECT status AS v FROM dead_letters WHERE id = $1", [.int(seeded.letter)]) == "open")
        let usage = await PayhookCLI.capture(["dead-letters", "replay"], environment: database.operatorEnvironment)
        #expect(usage.termination == .exited(2))
    }

    @Test("inbound reprocess counts in a dry run and sets processed rows back to pending with --execute")
    func reprocess() async throws {
        let database = try await TestDatabase.migrated("dl_reprocess")
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, attempts, processed_at, received_at)
            VALUES ('adyen', 'a1', '\\x7b7d', 'processed', 1, now(), now()),
                   ('adyen', 'a2', '\\x7b7d', 'processed', 1, now(), now() - interval '3 days'),
                   ('pxp', 'p1', '\\x7b7d', 'processed', 1, now(), now())
            """)
        let env = database.operatorEnvironment
        let dry = await PayhookCLI.capture(["inbound", "reprocess", "--provider", "adyen", "--since", "1d"], environment: env)
        #expect(dry.termination == .exited(0), "\(dry.standardError)")
        #expect(dry.standardOutput.contains("would reprocess 1 processed adyen deliveries"), "\(dry.standardOutput)")
        #expect(try await database.int("SELECT count(*) AS n FROM inbound_events WHERE status = 'pending'") == 0)

        let run = await PayhookCLI.capture(["inbound", "reprocess", "--provider", "adyen", "--since", "1d", "--execute"], environment: env)
        #expect(run.termination == .exited(0), "\(run.standardError)")
        #expect(try await database.string("SELECT string_agg(dedup_key, ',') AS v FROM inbound_events WHERE status = 'pending'") == "a1")
        #expect(try await database.string("SELECT action AS v FROM audit_log") == "inbound.reprocess")

        let missing = await PayhookCLI.capture(["inbound", "reprocess", "--since", "1d"], environment: env)
        #expect(missing.termination == .exited(2))
    }

    @Test("inbound reprocess sets a delivery pending once per run: one the processors finished again after the run started is left alone")
    func reprocessOncePerRun() async throws {
        let database = try await TestDatabase.migrated("dl_reprocess_once")
        // `again` stands for a row this run set pending and a processor finished again before the
        // run's next batch: its processed_at is later than the run's start.
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status, attempts, processed_at, received_at)
            VALUES ('adyen', 'before', '\\x7b7d', 'processed', 1, now() - interval '1 minute', now() - interval '1 hour'),
                   ('adyen', 'again', '\\x7b7d', 'processed', 1, now() + interval '1 hour', now() - interval '1 hour')
            """)
        let run = await PayhookCLI.capture(["inbound", "reprocess", "--provider", "adyen", "--since", "1d", "--execute"],
                                           environment: database.operatorEnvironment)
        #expect(run.termination == .exited(0), "\(run.standardError)")
        #expect(try await database.string("SELECT string_agg(dedup_key, ',') AS v FROM inbound_events WHERE status = 'pending'") == "before")
    }
}
