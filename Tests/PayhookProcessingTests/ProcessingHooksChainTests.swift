import Foundation
import PayhookCore
import PayhookLedger
import PayhookPostgres
import Synchronization
import Testing
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookProcessing

/// How the composition root chains the features' reactions to processing (fulfillment, then
/// subscriptions): both run, in order, on the processor's connection, and the processor sees
/// what both report.
@Suite("Processing hooks chain", .timeLimit(.minutes(2)))
struct ProcessingHooksChainTests {
    /// What the hooks were called with, in call order.
    private final class Calls: Sendable {
        let list = Mutex<[String]>([])
        func append(_ call: String) { list.withLock { $0.append(call) } }
        var all: [String] { list.withLock { $0 } }
    }

    private func recording(_ name: String, overpayments: Int, into calls: Calls) -> ProcessingHooks {
        ProcessingHooks(
            tokenStatusChanged: { tokenID, status, _, _ in calls.append("\(name) token \(tokenID) \(status.rawValue)") },
            afterBatch: { touched, _ in
                calls.append("\(name) batch \(touched.orderIDs.sorted())")
                return AfterBatchReport(overpayments: overpayments)
            })
    }

    @Test("then runs the first hooks before the next ones with the same arguments, and adds up their reports")
    func chainRunsBothInOrder() async throws {
        let connection = try await PostgresConnection.connect(try TestDatabase.baseURL())
        defer { connection.close() }
        let calls = Calls()
        let chained = recording("fulfillment", overpayments: 2, into: calls)
            .then(recording("subscriptions", overpayments: 1, into: calls))

        var touched = TouchedRows()
        touched.orderIDs = [7, 3]
        let report = try await chained.afterBatch(touched, connection)
        try await chained.tokenStatusChanged(41, .disabled, nil, connection)

        #expect(report == AfterBatchReport(overpayments: 3))
        #expect(calls.all == [
            "fulfillment batch [3, 7]", "subscriptions batch [3, 7]",
            "fulfillment token 41 disabled", "subscriptions token 41 disabled",
        ])
    }
}
