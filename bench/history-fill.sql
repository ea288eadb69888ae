-- Synthetic payhook history, as processing writes it: per delivery one inbound_events row and one
-- payment_events row, one payment per three deliveries, one succeeded job per four, one rejected
-- delivery per two hundred; every table's ids in time order. Shared by bench/retention and
-- bench/console (bench_fill_history in bench/lib.sh). psql variables: rows, days (span), ago
-- (days before now of the last row), rate (deliveries per second), tag (keeps keys unique).
CREATE TEMP TABLE fill_times AS
    SELECT g, now() - make_interval(days => :ago) - make_interval(days => :days) + g * make_interval(secs => 1.0 / :rate) AS t
    FROM generate_series(1, :rows) g;
INSERT INTO inbound_events (provider, account, dedup_key, event_type, received_at, remote_addr, headers, query, body,
                            status, attempts, next_attempt_at, processed_at)
SELECT (ARRAY['adyen', 'mercadopago', 'pxp'])[1 + g % 3], '', :'tag' || '-' || g, 'AUTHORISATION', t, '203.0.113.7',
       '{"content-type": "application/json", "user-agent": "Adyen HttpClient 1.0"}', '',
       convert_to('{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"'
                  || encode(sha256(convert_to(g::text, 'UTF8')), 'base64') || '","authCode":"' || g % 999999
                  || '","cardSummary":"1111","expiryDate":"03/2030","paymentMethodVariant":"visa"},"amount":{"currency":"EUR","value":'
                  || 1000 + g % 9000 || '},"eventCode":"AUTHORISATION","eventDate":"' || t || '","merchantAccountCode":"Shop",'
                  || '"merchantReference":"order-' || :'tag' || '-' || g || '","paymentMethod":"visa","pspReference":"'
                  || md5(:'tag' || g) || '","reason":"' || g % 999999 || ':1111:03/2030","success":"true"}}]}', 'UTF8'),
       'processed', 1, t, t + interval '50 milliseconds'
FROM fill_times;
INSERT INTO payments (provider, provider_payment_id, merchant_reference, amount_minor, currency, status, created_at, updated_at)
SELECT 'adyen', md5(:'tag' || g), 'order-' || :'tag' || '-' || g, 1000 + g % 9000, 'EUR', 'captured', t, t
FROM fill_times WHERE g % 3 = 0;
INSERT INTO payment_events (payment_id, inbound_event_id, type, occurred_at, recorded_at, data)
SELECT p.id, e.id, 'payment.authorized', e.received_at, e.processed_at,
       jsonb_build_object('psp_reference', md5(:'tag' || f.g), 'amount', 1000 + f.g % 9000, 'currency', 'EUR', 'status', 'authorized')
FROM fill_times f JOIN inbound_events e ON e.dedup_key = :'tag' || '-' || f.g
LEFT JOIN payments p ON p.provider = 'adyen' AND p.provider_payment_id = md5(:'tag' || (f.g - f.g % 3))
ORDER BY f.g;
INSERT INTO jobs (kind, payload, unique_key, state, attempt, run_at, created_at, finalized_at)
SELECT 'fulfill_order', jsonb_build_object('order_id', g), 'fulfill_order:' || :'tag' || '-' || g, 'succeeded', 1, t, t, t + interval '1 second'
FROM fill_times WHERE g % 4 = 0;
INSERT INTO rejected_deliveries (provider, reason, remote_addr, received_at, headers, body_size, body)
SELECT 'adyen', 'signature_mismatch', '198.51.100.' || g % 250, t, '{"content-type": "application/json"}', 700,
       convert_to(repeat('{"forged":true}', 40), 'UTF8')
FROM fill_times WHERE g % 200 = 0;
