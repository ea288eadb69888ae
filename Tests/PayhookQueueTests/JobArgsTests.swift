import Foundation
import PayhookCore
import PayhookPostgres
@testable import PayhookQueue
import PayhookTestSupport
import Testing

/// Arguments with every accessor kind, for the round trip through the table.
private struct ShipmentArgs: JobArgs, Equatable {
    static let kind = "ship"
    let parcel: Int64
    let carrier: String
    let note: String?
    let batch: Int64?

    init(parcel: Int64, carrier: String, note: String?, batch: Int64?) {
        self.parcel = parcel
        self.carrier = carrier
        self.note = note
        self.batch = batch
    }

    var payload: JSONOutput {
        .object([.init("parcel", .int(parcel)), .init("carrier", .string(carrier)), .init("note", .optional(note)),
                 .init("batch", .optional(batch))])
    }

    init(payload: JobPayload) throws(JobPayloadError) {
        parcel = try payload.int64("parcel")
        carrier = try payload.string("carrier")
        note = try payload.optionalString("note")
        batch = try payload.optionalInt64("batch")
    }
}

/// A job whose payload holds only `n`, as the claim test enqueues it.
struct CountArgs: JobArgs, Equatable {
    static let kind = "a"
    let n: Int64
    var payload: JSONOutput { .object([.init("n", .int(n))]) }
    init(payload: JobPayload) throws(JobPayloadError) { n = try payload.int64("n") }
}

@Suite("Job arguments", .timeLimit(.minutes(5)))
struct JobArgsTests {
    @Test("typed arguments are stored under their kind and read back from the stored payload")
    func roundTrip() async throws {
        try await QueueDatabase.withFixture { db in
            let queue = db.queue()
            let sent = ShipmentArgs(parcel: 9_007_199_254_740_993, carrier: "post \"fast\" ☃", note: nil, batch: 4)
            let single = try #require(try await queue.enqueue(sent, uniqueKey: "ship:1"))
            let batched = try await db.pool.transaction { connection in
                try await queue.enqueue([JobRequest(ShipmentArgs(parcel: 2, carrier: "ups", note: "fragile", batch: nil))],
                                        on: connection)
            }
            let jobs = try await queue.claim(limit: 10, kinds: [ShipmentArgs.kind], worker: "w", lease: .seconds(30))
            #expect(Set(jobs.map(\.id)) == Set([single] + batched))
            #expect(try jobs.first { $0.id == single }?.decodeArgs(ShipmentArgs.self) == sent)
            #expect(try jobs.first { $0.id != single }?.decodeArgs(ShipmentArgs.self)
                == ShipmentArgs(parcel: 2, carrier: "ups", note: "fragile", batch: nil))
            // An integer above 2^53 comes back digit for digit (no trip through Double).
            let stored = try await db.pool.query("SELECT payload->>'parcel' AS parcel FROM jobs WHERE id = $1", [.int(single)])
            #expect(try stored.rows.first?.decode("parcel", as: String.self) == "9007199254740993")
        }
    }

    @Test("a payload that does not give the arguments names the key, never the value")
    func invalidPayloads() {
        func error(_ json: String) -> JobPayloadError? {
            do {
                _ = try ShipmentArgs(payload: JobPayload(json: json))
                return nil
            } catch {
                return error
            }
        }
        #expect(error(#"[1]"#) == JobPayloadError(.notAnObject))
        #expect(error(#"{"parcel": 1"#) == JobPayloadError(.notAnObject))
        #expect(error(#"{"carrier": "x"}"#) == JobPayloadError(.missing, key: "parcel"))
        #expect(error(#"{"parcel": null, "carrier": "x"}"#) == JobPayloadError(.missing, key: "parcel"))
        #expect(error(#"{"parcel": 1.5, "carrier": "x"}"#)?.key == "parcel")
        #expect(error(#"{"parcel": "1", "carrier": "x"}"#)?.code == .wrongType)
        let secret = error(#"{"parcel": 1, "carrier": 4242424242424242}"#)
        #expect(secret == JobPayloadError(.wrongType, key: "carrier", expected: "a string"))
        #expect(secret.map { !String(describing: $0).contains("4242") } == true)
        // Absent and null optional keys both read as nil (older payloads lack newer keys).
        #expect(error(#"{"parcel": 1, "carrier": "x"}"#) == nil)
        #expect(error(#"{"parcel": 1, "carrier": "x", "note": null, "batch": null}"#) == nil)
    }
}
