import PayhookPostgres
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

@Suite("Processing SQL", .timeLimit(.minutes(1)))
struct ProcessingSQLTests {
    static let statements: [(String, String)] = [
        ("claim_due", ProcessingSQL.claimDue), ("lock_keys", ProcessingSQL.lockKeys),
        ("mark_processed", ProcessingSQL.markProcessed), ("schedule_retry", ProcessingSQL.scheduleRetry),
        ("mark_dead", ProcessingSQL.markDead), ("insert_dead_letter", ProcessingSQL.insertDeadLetter),
        ("select_payment", ProcessingSQL.selectPaymentForUpdate), ("insert_placeholder", ProcessingSQL.insertPlaceholderPayment),
        ("insert_payment", ProcessingSQL.insertPayment), ("update_payment", ProcessingSQL.updatePayment),
        ("insert_adjustment", ProcessingSQL.insertAdjustment), ("mark_refund_failed", ProcessingSQL.markRefundFailed),
        ("adjustment_totals", ProcessingSQL.adjustmentTotals), ("select_order", ProcessingSQL.selectOrderForUpdate),
        ("insert_order", ProcessingSQL.insertOrder), ("update_order", ProcessingSQL.updateOrder),
        ("select_token", ProcessingSQL.selectTokenForUpdate), ("insert_token", ProcessingSQL.insertToken),
        ("update_token", ProcessingSQL.updateToken), ("insert_payment_event", ProcessingSQL.insertPaymentEvent),
    ]

    @Test("every processing statement prepares against the migrated schema")
    func prepareAll() async throws {
        let database = try await TestDatabase.migrated("proc_sql")
        let connection = try await PostgresConnection.connect(database.url)
        defer { connection.close() }
        for (name, sql) in Self.statements {
            do {
                try await connection.execute("PREPARE \(name) AS \(sql)")
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
    }
}
