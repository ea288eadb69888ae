# Shared by the bench scripts; sourced after ops/lib.sh (PAYHOOK_PG_DIR set).

# CPU seconds (user + system) of a process; 0 once it has gone.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# CPU seconds of the PostgreSQL cluster: its live processes (payhook's pooled backends among
# them) plus the backends that have exited, which the postmaster has reaped into its children's
# time (pgbench's backends exit when pgbench does). A backend exiting while this runs can be
# counted twice or missed: a few milliseconds against the seconds a phase takes.
pg_cpu() {
    local total postmaster
    postmaster=$(head -1 "$PAYHOOK_PG_DIR/data/postmaster.pid")
    total=$(awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15 + $16 + $17) / hz }' "/proc/$postmaster/stat")
    for pid in $(pgrep -P "$postmaster" || true); do total=$(awk "BEGIN { print $total + $(cpu_of "$pid") }"); done
    echo "$total"
}

# psql on the bench's database, unaligned and quiet, stopping at the first error.
sql() { as_pg_owner "$PG_BIN/psql" -h "$PAYHOOK_PG_DIR/run" -p "$PAYHOOK_PG_PORT" -d payhook -qAt -v ON_ERROR_STOP=1 "$@"; }

# The webhook secrets payhook-ingest-load signs with and `serve_ingress` configures.
export BENCH_MP_SECRET=bench-mercadopago-secret
export BENCH_ADYEN_HEX_KEY=44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056
export BENCH_PXP_KEY=bench-pxp-key

# Starts `BINARY serve --roles ingress` on 127.0.0.1:PORT (admin on PORT + 1, token
# bench-admin-token) in the background, logging to LOG; sets SERVED_PID. The load comes from one
# address standing in for many senders, so the per-address connection limit is off unless
# BENCH_MAX_CONNECTIONS_PER_IP says otherwise (the default 64 would refuse 192 of wrk's 256).
serve_ingress() { # $1 binary, $2 port, $3 log file
    PAYHOOK_MAX_CONNECTIONS_PER_IP=${BENCH_MAX_CONNECTIONS_PER_IP:-0} \
    PAYHOOK_LISTEN=127.0.0.1:$2 PAYHOOK_ADMIN_LISTEN=127.0.0.1:$(($2 + 1)) PAYHOOK_ADMIN_TOKEN=bench-admin-token PAYHOOK_LOG_LEVEL=warning \
    PAYHOOK_MERCADOPAGO_SECRETS=$BENCH_MP_SECRET PAYHOOK_ADYEN_HMAC_KEYS=$BENCH_ADYEN_HEX_KEY PAYHOOK_PXP_WEBHOOK_KEYS=$BENCH_PXP_KEY \
        "$1" serve --roles ingress > "$3" 2>&1 &
    SERVED_PID=$!
}

# Gives a fresh cluster the recycled WAL a long-running one has. A new cluster creates each 16 MB
# WAL segment the first time it needs one and zero-fills it while commits wait; at 5,000
# deliveries/s that is a segment about every 3 s, and the paced phase's per-second p99 rose every
# 3 s with it (2026-11-30, alternating runs: p99 9.5 / 15.4 / 25.2 ms cold, 3.6 / 11.7 / 9.4 ms
# after this). A running cluster renames old segments for reuse at each checkpoint instead: about
# 530 MB of WAL written and dropped, then a checkpoint, leaves 32 segments ready (about 5 s).
pg_warm_wal() {
    sql -c "CREATE TABLE bench_wal_warmup AS SELECT g, repeat('w', 1000) AS filler FROM generate_series(1, 500000) g" \
        -c "DROP TABLE bench_wal_warmup" -c "CHECKPOINT"
}

# One Adyen AUTHORISATION body per key `k` (SQL expression): each event for its own payment, the
# common case and the hardest one (every event inserts a payment row and a history row).
# bench/normalize and bench/end-to-end fill inbound_events with it for their pgbench ceilings.
ADYEN_BODY="format('{\"live\":\"false\",\"notificationItems\":[{\"NotificationRequestItem\":{\"additionalData\":{\"hmacSignature\":\"eA==\"},\"amount\":{\"currency\":\"EUR\",\"value\":10010},\"eventCode\":\"AUTHORISATION\",\"eventDate\":\"2025-02-24T15:20:56+01:00\",\"merchantAccountCode\":\"PayhookShopEU\",\"merchantReference\":\"order-%s\",\"paymentMethod\":\"mc\",\"pspReference\":\"%s\",\"reason\":\"\",\"success\":\"true\"}}]}', k, k)"

# Writes to $1 a pgbench script of the processing transaction for one batch of $2 pending Adyen
# events (bodies as ADYEN_BODY): claim with SKIP LOCKED and read their bodies, the advisory
# locks, one savepoint for the batch, the batch's payments read FOR UPDATE in one statement, its
# new payments inserted in one and its payment_events rows in one, then mark processed and
# commit; one round trip each, as payhook sends them (ApplyPass). It decodes no
# JSON and builds no values: the database's bound for payhook on these statements.
write_processing_ceiling_script() { # $1 file, $2 batch size
    local batch=$2 columns="id, status, amount_minor, currency, refunded_minor, chargebacks, chargeback_reversals, capture_failures, status_detail, method, funding, merchant_reference, account, order_id, provider_updated_at"
    {
        echo "BEGIN;"
        echo "SELECT array_agg(id ORDER BY id) AS ids, array_agg(dedup_key ORDER BY id) AS keys, sum(length(body)) AS body_bytes FROM (SELECT id, dedup_key, body FROM inbound_events WHERE status = 'pending' AND next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT $batch FOR UPDATE SKIP LOCKED) AS claimed \\gset"
        echo "SELECT count(pg_advisory_xact_lock(1886677611, h)) AS locked FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(:keys::text[]) AS key, LATERAL (VALUES ('payment/adyen/' || key), ('reference/adyen/order-' || key)) AS v(k) ORDER BY 1) AS keys;"
        echo "SAVEPOINT inbound_batch;"
        echo "SELECT provider, provider_payment_id, $columns FROM payments WHERE (provider, provider_payment_id) IN (SELECT 'adyen', unnest(:keys::text[])) ORDER BY id FOR UPDATE;"
        # The batch's new payments in one statement (ApplyPass), their ids in insertion order.
        echo "WITH inserted AS (INSERT INTO payments (provider, provider_payment_id, account, order_id, merchant_reference, amount_minor, currency, refunded_minor, status, status_detail, method, funding, provider_updated_at, chargebacks, chargeback_reversals, capture_failures) SELECT 'adyen', k, '', NULL, 'order-' || k, 10010, 'EUR', 0, 'authorized', NULL, 'mc', NULL, to_timestamp(1740406856), 0, 0, 0 FROM unnest(:keys::text[]) AS k RETURNING provider, provider_payment_id, id) SELECT array_agg(id) AS payment_ids FROM inserted \\gset"
        echo "INSERT INTO payment_events (payment_id, order_id, vault_token_id, inbound_event_id, type, occurred_at, data) SELECT p, NULL, NULL, i, 'payment.authorized', to_timestamp(1740406856), ('{\"currency\": \"EUR\", \"provider\": \"adyen\", \"amount_minor\": 10010, \"status_after\": \"authorized\", \"provider_status\": \"AUTHORISATION\", \"reported_status\": \"authorized\", \"merchant_reference\": \"order-' || k || '\", \"provider_payment_id\": \"' || k || '\"}')::jsonb FROM unnest(:payment_ids::bigint[], :ids::bigint[], :keys::text[]) AS t(p, i, k);"
        echo "RELEASE SAVEPOINT inbound_batch;"
        echo "UPDATE inbound_events SET status = 'processed', processed_at = clock_timestamp(), attempts = attempts + 1, last_error = NULL WHERE id = ANY(:ids::bigint[]);"
        echo "COMMIT;"
    } > "$1"
}

# Writes synthetic history (bench/history-fill.sql): $2 deliveries over $3 days ending $4 days
# ago at $5 deliveries/s, keys tagged $1. bench/retention and bench/console share it.
bench_fill_history() { # $1 tag, $2 rows, $3 days, $4 days ago, $5 rate
    sql -v rows="$2" -v days="$3" -v ago="$4" -v rate="$5" -v tag="$1" < bench/history-fill.sql
}
