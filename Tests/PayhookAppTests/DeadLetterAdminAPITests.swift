import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// `/v1/dead-letters` on the admin listener: bearer token, JSON, stable error codes.
@Suite("Dead letters on the admin API", .timeLimit(.minutes(5)))
struct DeadLetterAdminAPITests {
    static let auth = [("Authorization", "Bearer \(TestSecrets.adminToken)")]

    static func call(_ ingress: IngressHarness, _ method: String, _ path: String, body: String? = nil,
                     authorized: Bool = true) async throws -> (status: Int, json: [String: Any]) {
        var headers = authorized ? auth : []
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response = try #require(await HTTPTestClient.send(
            port: ingress.adminPort, method: method, path: path, headers: headers, body: Array((body ?? "").utf8)))
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return (response.status, json)
    }

    @Test("every route needs the admin token")
    func unauthorized() async throws {
        try await IngressHarness.with("dlapi_auth") { (ingress) async throws in
            let seeded = try await ingress.database.seedDeadInbound()
            #expect(try await Self.call(ingress, "GET", "/v1/dead-letters", authorized: false).status == 401)
            #expect(try await Self.call(ingress, "POST", "/v1/dead-letters/\(seeded.letter)/replay", authorized: false).status == 401)
            #expect(try await ingress.database.string("SELECT status AS v FROM dead_letters") == "open")
        }
    }

    @Test("list filters, show returns the delivery and the plan, replay and discard execute once and are audited")
    func listShowReplayDiscard() async throws {
        try await IngressHarness.with("dlapi_flow") { (ingress) async throws in
            let database = ingress.database
            let pxp = try await database.seedDeadInbound(provider: "pxp")
            let job = try await database.seedDeadJob()

            let all = try await Self.call(ingress, "GET", "/v1/dead-letters")
            #expect(all.status == 200)
            #expect((all.json["dead_letters"] as? [[String: Any]])?.count == 2)
            let jobs = try await Self.call(ingress, "GET", "/v1/dead-letters?source=job&status=open")
            #expect((jobs.json["dead_letters"] as? [[String: Any]])?.compactMap { ($0["id"] as? NSNumber)?.int64Value } == [job.letter])

            let shown = try await Self.call(ingress, "GET", "/v1/dead-letters/\(pxp.letter)")
            #expect(shown.status == 200)
            #expect((shown.json["inbound_event"] as? [String: Any])?["status"] as? String == "dead")
            #expect((shown.json["replay_would"] as? String)?.contains("pending") == true)

            let replayed = try await Self.call(ingress, "POST", "/v1/dead-letters/\(pxp.letter)/replay",
                                               body: #"{"note":"provider back","actor":"bob"}"#)
            #expect(replayed.status == 200, "\(replayed.json)")
            #expect(replayed.json["changed"] as? Bool == true)
            #expect(try await database.string("SELECT status || '/' || attempts AS v FROM inbound_events WHERE id = $1", [.int(pxp.event)]) == "pending/0")
            let noNote = try await Self.call(ingress, "POST", "/v1/dead-letters/\(pxp.letter)/replay")
            #expect(noNote.status == 400 && noNote.json["field"] as? String == "note", "\(noNote.json)")
            let again = try await Self.call(ingress, "POST", "/v1/dead-letters/\(pxp.letter)/replay", body: #"{"note":"again"}"#)
            #expect(again.status == 200)
            #expect(again.json["changed"] as? Bool == false)

            let discarded = try await Self.call(ingress, "POST", "/v1/dead-letters/\(job.letter)/discard", body: #"{"note":"order refunded by hand"}"#)
            #expect(discarded.status == 200, "\(discarded.json)")
            #expect(try await database.string("SELECT status || '/' || resolved_by AS v FROM dead_letters WHERE id = $1", [.int(job.letter)])
                    == "discarded/admin-token")
            // The actor is the credential (PAYHOOK_ADMIN_TOKEN's, named by PAYHOOK_ADMIN_ACTOR's
            // default); the body's actor is only a note.
            let audit = try await database.string(
                "SELECT string_agg(actor || '(' || coalesce(actor_note, '') || '):' || action, ',' ORDER BY id) AS v FROM audit_log")
            #expect(audit == "admin-token(bob):dead_letter.replay,admin-token():dead_letter.discard")
        }
    }

    @Test("bad input is 400 naming the field; unknown ids are 404; both with a stable code")
    func errors() async throws {
        try await IngressHarness.with("dlapi_errors") { (ingress) async throws in
            let seeded = try await ingress.database.seedDeadInbound()
            let noNote = try await Self.call(ingress, "POST", "/v1/dead-letters/\(seeded.letter)/discard")
            #expect(noNote.status == 400)
            #expect(noNote.json["code"] as? String == "invalid_argument")
            #expect(noNote.json["field"] as? String == "note")
            #expect(try await ingress.database.string("SELECT status AS v FROM dead_letters") == "open")

            let badStatus = try await Self.call(ingress, "GET", "/v1/dead-letters?status=closed")
            #expect(badStatus.status == 400 && badStatus.json["field"] as? String == "status")
            let badID = try await Self.call(ingress, "GET", "/v1/dead-letters/abc")
            #expect(badID.status == 400 && badID.json["field"] as? String == "id")
            let badBody = try await Self.call(ingress, "POST", "/v1/dead-letters/\(seeded.letter)/replay", body: "not json")
            #expect(badBody.status == 400 && badBody.json["field"] as? String == "body")
            let badNote = try await Self.call(ingress, "POST", "/v1/dead-letters/\(seeded.letter)/replay", body: #"{"note": 5}"#)
            #expect(badNote.status == 400 && badNote.json["field"] as? String == "note")

            let unknown = try await Self.call(ingress, "POST", "/v1/dead-letters/987654/replay", body: #"{"note": "x"}"#)
            #expect(unknown.status == 404 && unknown.json["code"] as? String == "not_found")
            #expect(try await Self.call(ingress, "DELETE", "/v1/dead-letters/\(seeded.letter)").status == 405)
        }
    }
}
