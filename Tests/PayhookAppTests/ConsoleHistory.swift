import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookPostgres
@testable import PayhookApp
@testable import PayhookConsole

/// A day of varied history for the console's charts and waiting lists, placed in the 24-hour
/// window that ends at `now`'s next full hour: interval `h` (0 = oldest) of every series gets
/// figures the tests can compute (`acceptedAdyen(h)`), with a refusal burst and a lag spike an
/// on-call engineer should notice. The current (still filling) hour is left empty.
enum ConsoleHistory {
    static let hours = 0...22
    /// Adyen deliveries stored in interval `h`: a daily rhythm and a burst in interval 17.
    static func acceptedAdyen(_ h: Int) -> Int { 2 + (h % 5) * 2 + (h == 17 ? 25 : 0) }
    /// Adyen refusals recorded in interval `h`: a burst of bad signatures in interval 17.
    static func refusedAdyen(_ h: Int) -> Int { h == 17 ? 12 : (h % 6 == 0 ? 1 : 0) }
    /// Lag spike: deliveries received in intervals 14–16 waited 20 s and more.
    static let slowIntervals = 14...16
    static func lettersOpened(_ h: Int) -> Int { h % 7 == 3 ? 4 : (h % 3 == 0 ? 1 : 0) }
    /// Letters opened before interval 18 were replayed two intervals later.
    static func lettersResolved(_ h: Int) -> Int { h >= 2 && h - 2 < 18 ? lettersOpened(h - 2) : 0 }
    static func fulfilled(_ h: Int) -> Int { 2 * (1 + h % 4) }   // adyen and mercadopago
    static let reviewIntervals = [8, 19]

    @discardableResult
    static func seed(_ database: TestDatabase, now: Date = Date()) async throws -> Date {
        let start = ConsoleWindow.day.range(now: now).start
        let bind: [PostgresValue] = [.timestamptz(start)]
        try await database.query("""
            INSERT INTO inbound_events (provider, account, dedup_key, event_type, received_at, body, status, attempts, processed_at,
                                        key_index)
            SELECT p, CASE WHEN p = 'adyen' AND k % 3 = 0 THEN 'eu' ELSE '' END, 'hist-' || p || '-' || h || '-' || k, 'payment.updated',
                   $1::timestamptz + make_interval(hours => h, secs => 60 + k * 37), '\\x7b7d', 'processed', 1,
                   $1::timestamptz + make_interval(hours => h, secs => 60 + k * 37)
                     + make_interval(secs => CASE WHEN h BETWEEN 14 AND 16 THEN 20 + k ELSE 0.2 + (k % 4) * 0.1 END),
                   -- Adyen's previous key still verifies some deliveries until hour 15 (a rotation).
                   CASE WHEN p = 'adyen' AND h BETWEEN 10 AND 15 AND k % 3 = 1 THEN 1 ELSE 0 END
            FROM unnest(ARRAY['mercadopago', 'adyen', 'pxp']) AS p, generate_series(0, 22) AS h,
                 LATERAL generate_series(1, CASE WHEN p = 'adyen' THEN 2 + (h % 5) * 2 + CASE WHEN h = 17 THEN 25 ELSE 0 END
                                                 WHEN p = 'pxp' THEN 4 + h % 3 ELSE 1 + (h % 2) END) AS k
            """, bind)
        try await database.query("""
            INSERT INTO rejected_deliveries (provider, account, reason, remote_addr, received_at, body_size, body)
            SELECT p, '', CASE WHEN k % 4 = 0 THEN 'missing_header' ELSE 'signature_mismatch' END, '203.0.113.' || k,
                   $1::timestamptz + make_interval(hours => h, secs => 120 + k * 53), 2, '\\x7b7d'
            FROM unnest(ARRAY['adyen', 'pxp']) AS p, generate_series(0, 22) AS h,
                 LATERAL generate_series(1, CASE WHEN p = 'adyen' AND h = 17 THEN 12 WHEN h % 6 = 0 THEN 1 ELSE 0 END) AS k
            """, bind)
        // Duplicates as ingress counts them: a few every fourth hour, a burst of retries at 17.
        try await database.query("""
            INSERT INTO inbound_duplicate_periods (period_start, provider, account, duplicates)
            SELECT $1::timestamptz + make_interval(hours => h, mins => 10), p, '', CASE WHEN p = 'adyen' AND h = 17 THEN 9 ELSE 1 + h % 2 END
            FROM unnest(ARRAY['adyen', 'mercadopago']) AS p, generate_series(0, 22) AS h WHERE h % 4 = 1 OR (p = 'adyen' AND h = 17)
            """, bind)
        try await database.query("""
            INSERT INTO dead_letters (source, source_id, provider, reason, error, status, created_at, resolved_at, resolved_by, note)
            SELECT 'job', 900000 + h * 100 + k, CASE WHEN k % 2 = 0 THEN 'pxp' ELSE 'mercadopago' END,
                   CASE WHEN k % 2 = 0 THEN 'max_attempts_exceeded' ELSE 'provider_timeout' END, 'fetch timed out',
                   CASE WHEN h < 18 THEN 'replayed' ELSE 'open' END, $1::timestamptz + make_interval(hours => h, secs => 300 + k * 61),
                   CASE WHEN h < 18 THEN $1::timestamptz + make_interval(hours => h + 2, secs => 300 + k * 61) END,
                   CASE WHEN h < 18 THEN 'alice' END, CASE WHEN h < 18 THEN 'provider back' END
            FROM generate_series(0, 22) AS h,
                 LATERAL generate_series(1, CASE WHEN h % 7 = 3 THEN 4 WHEN h % 3 = 0 THEN 1 ELSE 0 END) AS k
            """, bind)
        try await database.query("""
            INSERT INTO orders (provider, account, merchant_reference, expected_amount_minor, expected_currency, registered_at,
                                fulfillment_status, fulfilled_at, status)
            SELECT p, '', 'hist-order-' || p || '-' || h || '-' || k, 1999, 'EUR', $1::timestamptz + make_interval(hours => h),
                   'fulfilled', $1::timestamptz + make_interval(hours => h, secs => 900 + k * 30), 'paid'
            FROM unnest(ARRAY['adyen', 'mercadopago']) AS p, generate_series(0, 22) AS h, LATERAL generate_series(1, 1 + h % 4) AS k
            """, bind)
        // Two orders sent to review: each a discarded fulfill_order job with its open letter.
        for (index, h) in reviewIntervals.enumerated() {
            let reason = index == 0 ? "amount 1999 EUR paid, 2000 EUR expected" : "currency BRL paid, EUR expected"
            let order = try await database.int("""
                INSERT INTO orders (provider, merchant_reference, expected_amount_minor, expected_currency, registered_at,
                                    fulfillment_status, review_reason, updated_at)
                VALUES ('adyen', 'hist-review-\(index)', 2000, 'EUR', $1::timestamptz, 'needs_review', $2,
                        $1::timestamptz + make_interval(hours => $3::int)) RETURNING id AS n
                """, [.timestamptz(start), .text(reason), .int(Int64(h))])
            let job = try await database.int("""
                INSERT INTO jobs (kind, payload, unique_key, state, attempt, max_attempts, finalized_at)
                VALUES ('fulfill_order', jsonb_build_object('order_id', $1::bigint), 'fulfill_order:' || $1, 'discarded', 1, 25, now())
                RETURNING id AS n
                """, [.int(order)])
            try await database.query("""
                INSERT INTO dead_letters (source, source_id, provider, reason, error, created_at)
                VALUES ('job', $1, 'adyen', 'fulfillment_mismatch: ' || $2, $2, $3::timestamptz + make_interval(hours => $4::int, secs => 600))
                """, [.int(job), .text(reason), .timestamptz(start), .int(Int64(h))])
        }
        // A week of charges, and one whose outcome is unknown.
        let subscription = try await database.int("""
            WITH token AS (INSERT INTO vault_tokens (provider, token, brand, last4, expiry)
                           VALUES ('adyen', 'tok-history', 'visa', '1111', '03/2030') RETURNING id)
            INSERT INTO subscriptions (vault_token_id, reference, amount_minor, currency, interval, start_at, next_charge_at)
            SELECT id, 'hist-plan', 990, 'EUR', '{"every": 1, "unit": "month"}', now() - interval '30 days', now() + interval '30 days'
            FROM token RETURNING id AS n
            """)
        try await database.query("""
            INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, status, provider,
                                 created_at, scheduled_at, attempted_at, settled_at, calls)
            SELECT $1, d * 100 + k, 1, 'hist-charge-' || d || '-' || k, 990, 'EUR',
                   CASE WHEN k % 7 = 0 THEN 'declined_hard' WHEN k % 4 = 0 THEN 'declined_soft' ELSE 'succeeded' END, 'adyen',
                   now() - make_interval(days => d, hours => k), now() - make_interval(days => d, hours => k),
                   now() - make_interval(days => d, hours => k), now() - make_interval(days => d, hours => k), 1
            FROM generate_series(0, 6) AS d, LATERAL generate_series(1, 4 + (d * 3) % 7) AS k
            """, [.int(subscription)])
        try await database.query("""
            INSERT INTO charges (subscription_id, cycle, attempt, idempotency_key, amount_minor, currency, status, provider,
                                 created_at, scheduled_at, attempted_at, calls, last_error)
            VALUES ($1, 9999, 1, 'hist-charge-unknown', 990, 'EUR', 'unknown', 'adyen', now() - interval '3 days',
                    now() - interval '3 days', now() - interval '3 days', 3, 'adyen answered HTTP 502 three times; idempotency window passed')
            """, [.int(subscription)])
        // Callbacks the merchant has not taken: two endpoints, one callback given up.
        try await database.query("""
            INSERT INTO merchant_callbacks (webhook_id, fact_key, type, order_id, url, body, status, attempts, last_status_code,
                                            last_error, created_at)
            SELECT 'order.paid.hist-' || k || '.0123456789abcdef', 'order.paid.hist-' || k, 'order.paid',
                   (SELECT min(id) FROM orders WHERE merchant_reference LIKE 'hist-order-%'),
                   CASE WHEN k <= 4 THEN 'https://shop.example/hooks/payhook' ELSE 'https://legacy.example/callback' END, '{}',
                   CASE WHEN k = 6 THEN 'failed' ELSE 'pending' END, 3 + k, CASE WHEN k <= 4 THEN 503 END,
                   CASE WHEN k > 4 THEN 'connect: connection refused' END, now() - make_interval(mins => k * 20)
            FROM generate_series(1, 6) AS k
            """)
        try await database.query("""
            INSERT INTO jobs (kind, payload, unique_key, state, attempt, run_at)
            SELECT 'merchant_callback', '{}', 'merchant_callback:' || webhook_id, 'retryable', attempts, now() + interval '50 minutes'
            FROM merchant_callbacks WHERE status = 'pending' AND webhook_id LIKE 'order.paid.hist-%'
            """)
        // The callback given up: its job discarded into an open dead letter.
        try await database.query("""
            WITH job AS (
                INSERT INTO jobs (kind, payload, unique_key, state, attempt, max_attempts, finalized_at)
                SELECT 'merchant_callback', '{}', 'merchant_callback:' || webhook_id, 'discarded', attempts, attempts, now()
                FROM merchant_callbacks WHERE status = 'failed' AND webhook_id LIKE 'order.paid.hist-%' RETURNING id)
            INSERT INTO dead_letters (source, source_id, reason, error)
            SELECT 'job', id, 'max_attempts_exceeded', 'connect: connection refused' FROM job
            """)
        // Waiting on the provider: one payment the sweep cannot look up, one it is asking about,
        // and a registered order whose fulfillment waits for the capture's amount.
        try await database.query("""
            WITH waiting AS (
                INSERT INTO payments (provider, provider_payment_id, amount_minor, currency, status, updated_at)
                VALUES ('adyen', 'HIST-ADYEN-STUCK', 4500, 'EUR', 'authorized', now() - interval '6 hours'),
                       ('pxp', 'HIST-PXP-PENDING', 1200, 'EUR', 'pending', now() - interval '40 minutes')
                RETURNING id, provider)
            INSERT INTO sweep_checks (subject, subject_id, provider, reason, checks, last_checked_at, waiting_on_provider_since)
            SELECT 'payment', id, provider, CASE WHEN provider = 'adyen' THEN 'authorized_unchanged' ELSE 'pending_unchanged' END,
                   CASE WHEN provider = 'adyen' THEN 1 ELSE 2 END, now() - interval '10 minutes',
                   CASE WHEN provider = 'adyen' THEN now() - interval '5 hours' END
            FROM waiting
            """)
        try await database.query("""
            INSERT INTO orders (provider, merchant_reference, expected_amount_minor, expected_currency, registered_at, waiting_for, waiting_since)
            VALUES ('mercadopago', 'hist-waiting-capture', 1500, 'BRL', now() - interval '20 minutes', 'the capture''s amount',
                    now() - interval '12 minutes')
            """)
        return start
    }
}
