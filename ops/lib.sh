# Shared by ops/ scripts: package installation and a throwaway PostgreSQL cluster.
# Sourced, not executed.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PAYHOOK_PG_PORT=${PAYHOOK_PG_PORT:-54329}
PAYHOOK_PG_DIR=${PAYHOOK_PG_DIR:-/tmp/payhook-pg-$PAYHOOK_PG_PORT}

log() { printf 'ops: %s\n' "$*" >&2; }

# Installs the Debian packages payhook builds and tests with, only when something is missing.
# Machines start without apt's package lists, so `apt-get update` runs once first.
ensure_packages() {
    local wanted=(pkg-config libpq-dev libssl-dev libmicrohttpd-dev libcurl4-openssl-dev postgresql-15 postgresql-contrib pgbouncer wrk python3 python3-venv)
    local missing=()
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A Python virtualenv with the independent Standard Webhooks verifier that a test checks our
# merchant callbacks against (https://pypi.org/project/standardwebhooks/). Prints its python.
ensure_python_verifier() {
    local venv="$PWD/.build/python-verifier"
    if ! "$venv/bin/python" -c 'import standardwebhooks' 2>/dev/null; then
        /usr/bin/python3 -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet --disable-pip-version-check 'standardwebhooks==1.1.0' >&2
    fi
    echo "$venv/bin/python"
}

# The console's browser test: Debian's chromium and chromium-driver (a real browser, nothing
# downloaded at test time) and Selenium from PyPI in a virtualenv. Prints the venv's python.
# Separate from ensure_packages so that `ops/run` does not install a browser.
ensure_browser_test() {
    local missing=()
    for p in chromium chromium-driver; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        # stdout is the interpreter's path (callers capture it), so apt says nothing there.
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    local venv="$PWD/.build/python-browser"
    if ! "$venv/bin/python" -c 'import selenium' 2>/dev/null; then
        /usr/bin/python3 -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet --disable-pip-version-check 'selenium==4.51.0' >&2
    fi
    echo "$venv/bin/python"
}

# PostgreSQL refuses to run as root; when we are root, the cluster runs as the `postgres` user
# that the Debian package creates (or `payhook-pg`, created here, if that is absent).
pg_owner() {
    if [ "$(id -u)" -ne 0 ]; then id -un; return; fi
    if id postgres >/dev/null 2>&1; then echo postgres; return; fi
    id payhook-pg >/dev/null 2>&1 || useradd --system --no-create-home payhook-pg
    echo payhook-pg
}

as_pg_owner() {
    local owner; owner=$(pg_owner)
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$owner" -- "$@"; else "$@"; fi
}

pg_database_url() {
    echo "postgresql:///payhook?host=$PAYHOOK_PG_DIR/run&port=$PAYHOOK_PG_PORT&user=$(pg_owner)"
}

# Creates (once) and starts a cluster on a Unix socket under $PAYHOOK_PG_DIR; idempotent.
pg_start() {
    local owner; owner=$(pg_owner)
    if [ ! -f "$PAYHOOK_PG_DIR/data/PG_VERSION" ]; then
        mkdir -p "$PAYHOOK_PG_DIR/data" "$PAYHOOK_PG_DIR/run"
        [ "$(id -u)" -eq 0 ] && chown -R "$owner" "$PAYHOOK_PG_DIR"
        chmod 700 "$PAYHOOK_PG_DIR/data"
        as_pg_owner "$PG_BIN/initdb" -D "$PAYHOOK_PG_DIR/data" -U "$owner" --auth=trust \
            --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        cat >> "$PAYHOOK_PG_DIR/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$PAYHOOK_PG_DIR/run'
port = $PAYHOOK_PG_PORT
max_connections = 500
shared_buffers = 512MB
fsync = on
synchronous_commit = on
CONF
        # PAYHOOK_PG_CONF: extra postgresql.conf lines for a new cluster (e.g. to compare settings).
        if [ -n "${PAYHOOK_PG_CONF:-}" ]; then
            printf '%s\n' "$PAYHOOK_PG_CONF" >> "$PAYHOOK_PG_DIR/data/postgresql.conf"
        fi
    fi
    if ! as_pg_owner "$PG_BIN/pg_ctl" -D "$PAYHOOK_PG_DIR/data" status >/dev/null 2>&1; then
        as_pg_owner "$PG_BIN/pg_ctl" -D "$PAYHOOK_PG_DIR/data" -l "$PAYHOOK_PG_DIR/server.log" -w -t 60 start >/dev/null
    fi
    as_pg_owner "$PG_BIN/psql" -h "$PAYHOOK_PG_DIR/run" -p "$PAYHOOK_PG_PORT" -d postgres -qAt \
        -c "SELECT 1 FROM pg_database WHERE datname='payhook'" | grep -q 1 ||
        as_pg_owner "$PG_BIN/createdb" -h "$PAYHOOK_PG_DIR/run" -p "$PAYHOOK_PG_PORT" payhook
}

pg_stop() {
    [ -d "$PAYHOOK_PG_DIR/data" ] || return 0
    as_pg_owner "$PG_BIN/pg_ctl" -D "$PAYHOOK_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
}

# --- PgBouncer in front of the cluster (ops/pgbouncer; PAYHOOK_DATABASE_POOLING=transaction) ---
PAYHOOK_PGBOUNCER_PORT=${PAYHOOK_PGBOUNCER_PORT:-54354}
PAYHOOK_PGBOUNCER_DIR=${PAYHOOK_PGBOUNCER_DIR:-$PAYHOOK_PG_DIR/pgbouncer-$PAYHOOK_PGBOUNCER_PORT}

pgbouncer_database_url() {
    echo "postgresql:///payhook?host=$PAYHOOK_PGBOUNCER_DIR&port=$PAYHOOK_PGBOUNCER_PORT&user=$(pg_owner)"
}

# Starts PgBouncer on a Unix socket in $PAYHOOK_PGBOUNCER_DIR, in front of the cluster's payhook
# database; the configuration is written anew each time. Like PostgreSQL, PgBouncer refuses to
# run as root, so it runs as the cluster's owner.
pgbouncer_start() {
    local owner; owner=$(pg_owner)
    pgbouncer_stop
    mkdir -p "$PAYHOOK_PGBOUNCER_DIR"
    # Trust, as the cluster does; the user must still be listed in auth_file.
    printf '"%s" ""\n' "$owner" > "$PAYHOOK_PGBOUNCER_DIR/userlist.txt"
    cat > "$PAYHOOK_PGBOUNCER_DIR/pgbouncer.ini" <<CONF
[databases]
payhook = host=$PAYHOOK_PG_DIR/run port=$PAYHOOK_PG_PORT dbname=payhook user=$owner

[pgbouncer]
listen_addr =
listen_port = $PAYHOOK_PGBOUNCER_PORT
unix_socket_dir = $PAYHOOK_PGBOUNCER_DIR
auth_type = trust
auth_file = $PAYHOOK_PGBOUNCER_DIR/userlist.txt
pool_mode = ${PAYHOOK_PGBOUNCER_MODE:-transaction}
default_pool_size = ${PAYHOOK_PGBOUNCER_POOL_SIZE:-20}
max_client_conn = 2000
logfile = $PAYHOOK_PGBOUNCER_DIR/pgbouncer.log
pidfile = $PAYHOOK_PGBOUNCER_DIR/pgbouncer.pid
CONF
    [ "$(id -u)" -eq 0 ] && chown -R "$owner" "$PAYHOOK_PGBOUNCER_DIR"
    as_pg_owner /usr/sbin/pgbouncer -d -q "$PAYHOOK_PGBOUNCER_DIR/pgbouncer.ini"
    local tries=0
    until [ -S "$PAYHOOK_PGBOUNCER_DIR/.s.PGSQL.$PAYHOOK_PGBOUNCER_PORT" ]; do
        tries=$((tries + 1))
        if [ $tries -gt 100 ]; then log "pgbouncer did not start; see $PAYHOOK_PGBOUNCER_DIR/pgbouncer.log"; return 1; fi
        sleep 0.1
    done
}

pgbouncer_stop() {
    local pidfile="$PAYHOOK_PGBOUNCER_DIR/pgbouncer.pid"
    [ -f "$pidfile" ] || return 0
    local pid; pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    local tries=0
    while kill -0 "$pid" 2>/dev/null && [ $tries -lt 30 ]; do tries=$((tries + 1)); sleep 0.1; done
    # Started by a process that blocks SIGTERM (a test runner), PgBouncer inherits the blocked
    # mask and never sees it; it holds nothing that needs a clean exit.
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}
