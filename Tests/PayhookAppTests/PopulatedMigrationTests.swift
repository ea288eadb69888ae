import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp

@Suite("Migrations on a populated schema", .timeLimit(.minutes(5)))
struct PopulatedMigrationTests {
    /// Every table that holds rows by id; each is fingerprinted before and after.
    static let tables = [
        "inbound_events", "rejected_deliveries", "orders", "payments", "payment_events", "vault_tokens", "subscriptions",
        "charges", "jobs", "dead_letters", "audit_log", "payment_adjustments", "merchant_callbacks",
    ]

    /// The columns each table has now, in order: what a later fingerprint compares, so that a
    /// migration that adds a column (0017: `payments.captured_minor`) still has to keep every
    /// value the rows held.
    static func columns(_ database: TestDatabase) async throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for table in tables {
            let list = try await database.string("""
                SELECT string_agg(quote_ident(column_name), ',' ORDER BY ordinal_position) AS v
                FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '\(table)'
                """)
            result[table] = (list ?? "").split(separator: ",").map(String.init)
        }
        return result
    }

    /// Row count and an md5 of every row's `columns`, in id order, per table.
    static func fingerprint(_ database: TestDatabase, columns: [String: [String]]) async throws -> [String: String] {
        var result: [String: String] = [:]
        for table in tables {
            let row = (columns[table] ?? []).map { "t.\($0)" }.joined(separator: ", ")
            result[table] = try await database.string("""
                SELECT count(*) || ' ' || coalesce(md5(string_agg(ROW(\(row))::text, '|' ORDER BY t.id)), '') AS v FROM \(table) t
                """)
        }
        return result
    }

    @Test("the migrations after 0013 keep every row of a schema populated at 0013, and unpin deliveries history came from")
    func populatedSchema() async throws {
        let database = try await TestDatabase.empty("migrate_populated")
        let all = try SchemaMigrations.all()
        let old = all.filter { $0.version <= 13 }
        _ = try await SchemaMigrationGate.run {
            try await PostgresMigrator(conninfo: database.url, migrations: old).migrate()
        }
        // One of each kind of row a running installation holds, linked as processing links them.
        try await database.query("""
            INSERT INTO inbound_events (provider, account, dedup_key, event_type, headers, body, status, processed_at)
            SELECT 'adyen', 'shop-a', 'k' || g, 'AUTHORISATION', '{"content-type": "application/json"}', convert_to('{"n":' || g || '}', 'UTF8'),
                   CASE WHEN g % 10 = 0 THEN 'pending' ELSE 'processed' END, CASE WHEN g % 10 = 0 THEN NULL ELSE now() END
            FROM generate_series(1, 200) g
            """)
        try await database.query("""
            INSERT INTO rejected_deliveries (provider, reason, remote_addr, body_size, body)
            VALUES ('pxp', 'signature_mismatch', '203.0.113.9', 2, '\\x7b7d')
            """)
        try await database.query("""
            INSERT INTO orders (provider, account, merchant_reference, amount_minor, currency, status, expected_amount_minor,
                                expected_currency, registered_at)
            SELECT 'adyen', 'shop-a', 'order-' || g, 1000 + g, 'EUR', 'paid', 1000 + g, 'EUR', now() FROM generate_series(1, 50) g
            """)
        try await database.query("""
            INSERT INTO payments (provider, account, provider_payment_id, order_id, merchant_reference, amount_minor, currency, status)
            SELECT 'adyen', 'shop-a', 'psp-' || g, g, 'order-' || g, 1000 + g, 'EUR', 'captured' FROM generate_series(1, 50) g
            """)
        try await database.query("""
            INSERT INTO payment_events (payment_id, order_id, inbound_event_id, type, occurred_at, data)
            SELECT 1 + (g % 50), 1 + (g % 50), g, 'payment.captured', now(), jsonb_build_object('n', g) FROM generate_series(1, 150) g
            """)
        try await database.query("""
            INSERT INTO payment_adjustments (provider, kind, reference, payment_id, amount_minor, currency, inbound_event_id)
            SELECT 'adyen', 'refund', 'ref-' || g, g, 100, 'EUR', 150 + g FROM generate_series(1, 20) g
            """)
        try await database.query("""
            INSERT INTO vault_tokens (provider, account, token, shopper_reference, brand, last4, expiry, first_payment_reference)
            VALUES ('adyen', 'shop-a', 'tok-1', 'shopper-1', 'visa', '1111', '03/2030', 'psp-1'),
                   ('mercadopago', '', '9120384756', NULL, 'master', '0007', '11/2030', 'PAY01')
            """)
        try await database.query("""
            INSERT INTO subscriptions (vault_token_id, reference, amount_minor, currency, interval, start_at, next_charge_at)
            VALUES (1, 'sub-1', 999, 'EUR', '{"months": 1}', now(), now() + interval '1 month')
            """)
        try await database.query("""
            INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, status, provider,
                                 payment_id, merchant_reference)
            VALUES (1, 1, 1, 'ph00000000-sub-1-c1-a1', 999, 'EUR', 'succeeded', 'adyen', 1, 'sub-1-c1')
            """)
        try await database.query("""
            INSERT INTO jobs (kind, payload, unique_key, state, finalized_at)
            VALUES ('fulfill_order', '{"order_id": 1}', 'fulfill_order:1', 'succeeded', now()),
                   ('charge_recurring', '{"charge_id": 1}', NULL, 'available', NULL)
            """)
        try await database.query("""
            INSERT INTO dead_letters (source, source_id, provider, reason, error) VALUES ('inbound_event', 10, 'adyen', 'x', 'y')
            """)
        try await database.query("INSERT INTO audit_log (actor, action, target) VALUES ('oncall', 'dead_letter.replay', 'dead_letters:1')")
        try await database.query("""
            INSERT INTO merchant_callbacks (webhook_id, type, order_id, body) VALUES ('msg_1', 'order.paid', 1, '{}')
            """)

        let columns = try await Self.columns(database)
        let before = try await Self.fingerprint(database, columns: columns)
        let applied = try await SchemaMigrationGate.run {
            try await PostgresMigrator(conninfo: database.url, migrations: all).migrate()
        }
        #expect(applied.map(\.version) == all.map(\.version).filter { $0 > 13 })
        #expect(try await Self.fingerprint(database, columns: columns) == before, "a row changed or went missing")
        #expect(try await database.string("SELECT coalesce(token_kind, 'none') AS v FROM vault_tokens WHERE provider = 'adyen'") == "none",
                "0018 marks only Mercado Pago tokens as card ids")
        #expect(try await database.string("SELECT token_kind AS v FROM vault_tokens WHERE provider = 'mercadopago'") == "card_id",
                "every Mercado Pago token stored before 0018 came from a card id")
        #expect(try await database.string("SELECT fact_key AS v FROM merchant_callbacks") == "msg_1",
                "a callback recorded before 0019 keeps its webhook_id as its fact key")
        for table in Self.tables {
            #expect(try await database.int("SELECT count(*) AS n FROM \(table)") > 0, "\(table) was not populated")
        }

        // A delivery that history and an adjustment came from can now go; they keep its id.
        try await database.query("DELETE FROM inbound_events WHERE id IN (1, 151)")
        #expect(try await database.int("SELECT count(*) AS n FROM payment_events WHERE inbound_event_id = 1") == 1)
        #expect(try await database.int("SELECT count(*) AS n FROM payment_adjustments WHERE inbound_event_id = 151") == 1)
    }

    @Test("payhook migrate --json on a populated schema names each migration it applied with the seconds it took")
    func migrateReportsSteps() async throws {
        let database = try await TestDatabase.empty("migrate_steps")
        let all = try SchemaMigrations.all()
        _ = try await SchemaMigrationGate.run {
            try await PostgresMigrator(conninfo: database.url, migrations: all.filter { $0.version <= 13 }).migrate()
        }
        try await database.query("""
            INSERT INTO inbound_events (provider, dedup_key, body, status) SELECT 'pxp', 'k' || g, '\\x7b7d', 'processed'
            FROM generate_series(1, 1000) g
            """)
        let result = await PayhookCLI.capture(["migrate", "--json"], environment: ["DATABASE_URL": database.url])
        #expect(result.termination == .exited(0), "\(result.standardError)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
                                    "\(result.standardOutput)")
        let steps = try #require(document["steps"] as? [[String: Any]], "\(result.standardOutput)")
        let expected = all.filter { $0.version > 13 }.map { "\(String(format: "%04d", $0.version))_\($0.name)" }
        #expect(steps.compactMap { $0["name"] as? String } == expected)
        #expect(steps.allSatisfy { ($0["seconds"] as? Double).map { $0 >= 0 } ?? false }, "\(steps)")
        #expect(document["applied"] as? [String] == expected)
    }
}
