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

# The webhook secrets payhook-ingest-load signs with and `serve_ingress` configures.
export BENCH_MP_SECRET=bench-mercadopago-secret
export BENCH_ADYEN_HEX_KEY=44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056
export BENCH_PXP_KEY=bench-pxp-key

# Starts `BINARY serve --roles ingress` on 127.0.0.1:PORT (admin on PORT + 1, token
# bench-admin-token) in the background, logging to LOG; sets SERVED_PID.
serve_ingress() { # $1 binary, $2 port, $3 log file
    PAYHOOK_LISTEN=127.0.0.1:$2 PAYHOOK_ADMIN_LISTEN=127.0.0.1:$(($2 + 1)) PAYHOOK_ADMIN_TOKEN=bench-admin-token PAYHOOK_LOG_LEVEL=warning \
    PAYHOOK_MERCADOPAGO_SECRETS=$BENCH_MP_SECRET PAYHOOK_ADYEN_HMAC_KEYS=$BENCH_ADYEN_HEX_KEY PAYHOOK_PXP_WEBHOOK_KEYS=$BENCH_PXP_KEY \
        "$1" serve --roles ingress > "$3" 2>&1 &
    SERVED_PID=$!
}
