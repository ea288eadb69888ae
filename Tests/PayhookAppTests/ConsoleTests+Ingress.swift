import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookConsole

/// What ingress records for the console beyond the stored deliveries: duplicates per interval.
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
}
