import PayhookPostgres
import Testing
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookProcessing
import PayhookLedger

/// How PostgreSQL plans the statements a processing batch runs once per batch, as a pooled
/// connection runs them: prepared, with the generic plan it caches, against statistics of a
/// running inbox (many processed rows, few pending).
@Suite("Processing: statement plans", .timeLimit(.minutes(5)))
struct ProcessingPlanTests {
    /// The plan PostgreSQL caches for `sql` once it is prepared, for the given argument list, in
    /// a migrated database of its own holding what `setup` wrote and analyzed.
    static func genericPlan(of sql: String, with arguments: String, database label: String,
                            after setup: String) async throws -> String {
        let database = try await TestDatabase.migrated(label)
        let connection = try await PostgresConnection.connect(database.url)
        defer { connection.close() }
        try await connection.execute(setup + "\nSET plan_cache_mode = force_generic_plan;")
        try await connection.execute("PREPARE planned AS \(sql)")
        var plan: [String] = []
        for row in try await connection.query("EXPLAIN EXECUTE planned(\(arguments))") { plan.append(try row.decode("QUERY PLAN")) }
        return plan.joined(separator: "\n")
    }

    /// Twenty thousand payments, analyzed: a table no batch should scan.
    static let manyPayments = """
        INSERT INTO payments (provider, provider_payment_id, status)
        SELECT 'adyen', 'psp-' || g, 'authorized' FROM generate_series(1, 20000) g;
        ANALYZE payments;
        """

    /// Marking a batch processed must find its rows by primary key. Served from the partial
    /// index of pending rows, it reads every pending entry, and every processed one vacuum has
    /// not removed yet, for each batch: the more a processor falls behind, the more each batch
    /// costs (bench/end-to-end: 2 – 7 ms per batch of 100 during a backlog).
    @Test("marking a batch processed looks its rows up by primary key, not through the pending index")
    func markProcessedUsesPrimaryKey() async throws {
        let text = try await Self.genericPlan(of: ProcessingSQL.shared.markProcessed, with: "'{5001,5002,5003}'",
                                              database: "processing_plan", after: """
            INSERT INTO inbound_events (provider, dedup_key, body, status, attempts, processed_at)
            SELECT 'adyen', 'processed-' || g, '\\x7b7d'::bytea, 'processed', 1, now() FROM generate_series(1, 5000) g;
            INSERT INTO inbound_events (provider, dedup_key, body)
            SELECT 'adyen', 'pending-' || g, '\\x7b7d'::bytea FROM generate_series(1, 20) g;
            ANALYZE inbound_events;
            """)
        #expect(text.contains("inbound_events_pkey"), "\(text)")
        #expect(!text.contains("inbound_events_due"), "\(text)")
    }

    /// The batch's payments are read in one statement (``ApplyPass``). Planned as a scan of
    /// `payments`, it would read the whole table for every batch; it must look each pair up in
    /// the unique index.
    @Test("reading a batch's payments looks each up in the unique index, not by scanning payments")
    func batchPaymentReadUsesUniqueIndex() async throws {
        let text = try await Self.genericPlan(of: ProcessingSQL.shared.selectPaymentsForUpdate,
                                              with: "'{adyen,adyen}', '{psp-7,psp-8}'",
                                              database: "processing_plan_payments", after: Self.manyPayments)
        #expect(text.contains("payments_provider_payment"), "\(text)")
        #expect(!text.contains("Seq Scan on payments"), "\(text)")
    }

    /// The batch's changed payments are written in one statement; each row must be found by
    /// primary key, not by scanning `payments` for every batch.
    @Test("writing a batch's changed payments finds each row by primary key")
    func batchPaymentUpdateUsesPrimaryKey() async throws {
        let text = try await Self.genericPlan(of: LedgerSQL.shared.updatePayments, with: """
            '{7}', '{""}', '{NULL}', '{NULL}', '{NULL}', '{NULL}', '{0}', '{captured}', '{NULL}', '{NULL}', '{NULL}', '{NULL}',
            '{0}', '{0}', '{0}'
            """, database: "processing_plan_payment_update", after: Self.manyPayments)
        #expect(text.contains("payments_pkey"), "\(text)")
        #expect(!text.contains("Seq Scan on payments"), "\(text)")
    }
}
