import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookConsole

/// What ingress records for the console beyond the stored deliveries: duplicates per interval and
/// which key of the ring verified each delivery.
extension ConsoleTests {
    @Test("a delivery sent three times is charted as one accepted and two duplicates, read back from the database")
    func duplicatesCharted() async throws {
        try await ConsoleHarness.with("console_duplicates") { console in
            let delivery = Sign.mercadoPago()
            for _ in 0..<3 {
                let answer = try #require(await HTTPTestClient.send(port: console.server.ingressPort, path: delivery.path,
                                                                    headers: delivery.headers, body: delivery.body))
                #expect(answer.status == 200)
            }
            // A fresh reader over the same database: the figure is durable, not this process's metric.
            let reads = ConsoleReads(pool: console.server.pool)
            for window in ConsoleWindow.allCases {
                let timeline = try await reads.timeline(window)
                let series = try #require(timeline.deliveries["mercadopago"], "\(window)")
                #expect(series.accepted.reduce(0, +) == 1, "\(window) accepted")
                #expect(series.duplicate.reduce(0, +) == 2, "\(window) duplicates")
                #expect(series.duplicate.last == 2, "\(window): in the current interval")
                #expect(timeline.deliveries["adyen"]?.duplicate.reduce(0, +) ?? 0 == 0)
            }
            let (cookie, _) = try await console.signIn()
            let overview = try await console.send("GET", "/console", cookie: cookie)
            #expect(overview.text.contains("1 accepted, 2 duplicate, 0 refused in the last 24 hours"))
            let page = try await console.send("GET", "/console/providers/mercadopago?window=1h", cookie: cookie)
            #expect(page.status == 200)
            #expect(page.text.contains("duplicate (acknowledged, stored once)"))
            #expect(!page.text.contains("no durable record"), "the note no longer says duplicates are not charted")
        }
    }

    @Test("the provider page says which key of the ring verified the last day's deliveries, per account, and when a previous key was last used")
    func keyRingRotation() async throws {
        try await ConsoleHarness.with("console_key_ring") { console in
            func send(_ delivery: SignedDelivery) async throws {
                let answer = try #require(await HTTPTestClient.send(port: console.server.ingressPort, path: delivery.path,
                                                                    headers: delivery.headers, body: delivery.body))
                #expect(answer.status == 200)
            }
            try await send(Sign.mercadoPago())
            try await send(Sign.mercadoPago())
            try await send(Sign.mercadoPago(secret: TestSecrets.mercadoPagoPrevious))
            let stored = try await console.database.query("SELECT key_index FROM inbound_events ORDER BY id")
                .map { try $0.decode("key_index", as: Int64?.self) }
            #expect(stored == [0, 0, 1], "each delivery stores the index of the key that verified it")
            // A delivery stored before the column existed: counted apart, not as the current key.
            try await console.database.query("""
                INSERT INTO inbound_events (provider, account, dedup_key, body, received_at) VALUES ('mercadopago', '', 'old', '\\x7b7d', now())
                """)
            let facts = try await ConsoleReads(pool: console.server.pool).providerFacts(provider: "mercadopago", account: nil)
            let use = try #require(facts.keyRing.first)
            #expect(facts.keyRing.count == 1)
            #expect(use.currentKey == 2 && use.previousKey == 1 && use.notRecorded == 1)
            #expect(use.lastPreviousKey != nil)
            let (cookie, _) = try await console.signIn()
            let page = try await console.send("GET", "/console/providers/mercadopago", cookie: cookie)
            #expect(page.text.contains("(default account)</strong>: 2 by the current key, 1 by a previous key, last use of a previous key <time"))
            #expect(page.text.contains("1 stored before payhook recorded the key"))
            let adyen = try await console.send("GET", "/console/providers/adyen", cookie: cookie)
            #expect(adyen.text.contains("No delivery from adyen in the last 24 hours."))
        }
    }
}
