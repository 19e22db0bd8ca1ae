#!/usr/bin/env bash
# Throwaway PostgreSQL 15 and Redis for the test suite.
#
#   scripts/test-services.sh start   # (re)start both; stale instances are stopped first
#   scripts/test-services.sh env     # print `export DATABASE_URL=... REDIS_URL=...`
#   scripts/test-services.sh stop    # stop both (safe to call when nothing runs)
#   scripts/test-services.sh status
#   scripts/test-services.sh stop-redis|start-redis|stop-pg|start-pg
#                                    # one service, keeping its port and data (the fault suite;
#                                    # stop-pg is an immediate shutdown, as in a crash)
#
# Everything lives under $TEST_SERVICES_DIR (default .run/test): the cluster, the redis
# working dir, logs, pid files and the chosen ports. `start` wipes that folder, so every
# run gets an empty cluster. Ports are the first free ones from 55432 (PostgreSQL) and
# 56379 (Redis) unless TEST_PG_PORT / TEST_REDIS_PORT say otherwise.
#
# PostgreSQL refuses to run as root: as root the cluster runs as `postgres` (or as a
# system user `pgtest`, created when neither exists). Missing binaries are installed
# from apt (postgresql, redis-server).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${TEST_SERVICES_DIR:-$ROOT/.run/test}"
case "$DIR" in /*) ;; *) DIR="$ROOT/$DIR" ;; esac
PG_DIR="$DIR/pg"
REDIS_DIR="$DIR/redis"
STATE="$DIR/state"          # key=value lines written by start, read by env/stop
DB_NAME="${TEST_DB_NAME:-responses}"
DB_USER="${TEST_DB_USER:-responses}"
DB_PASSWORD="${TEST_DB_PASSWORD:-responses}"

log() { echo "test-services: $*" >&2; }
die() { log "error: $*"; exit 1; }

sudo_if_needed() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi
}

apt_install() {
    log "installing $* from apt"
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# --- locating binaries ---------------------------------------------------------------------
pg_bindir() {
    local d
    # Prefer Debian's versioned folders (15 first: the version CI targets), then PATH.
    for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/psql" ]; then echo "$d"; return 0; fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null && command -v psql >/dev/null; then
        dirname "$(command -v initdb)"; return 0
    fi
    return 1
}

ensure_binaries() {
    if ! pg_bindir >/dev/null; then apt_install postgresql; fi
    PG_BIN="$(pg_bindir)" || die "no initdb/pg_ctl/psql found even after installing postgresql"
    if ! command -v redis-server >/dev/null; then apt_install redis-server; fi
    command -v redis-server >/dev/null || die "redis-server not found even after installing it"
}

# --- who runs PostgreSQL ---------------------------------------------------------------------
PG_USER=""
pick_pg_user() {
    if [ "$(id -u)" != 0 ]; then PG_USER="$(id -un)"; return; fi
    if id postgres >/dev/null 2>&1; then
        PG_USER=postgres
    else
        id pgtest >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pgtest
        PG_USER=pgtest
    fi
}

as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$PG_USER" -- "$@"
    else
        "$@"
    fi
}

# --- helpers -----------------------------------------------------------------------------------
port_free() {
    # Free means: nothing listens there and we may bind it.
    python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

first_free_port() {
    local port="$1" last=$(( $1 + 200 ))
    while [ "$port" -le "$last" ]; do
        if port_free "$port"; then echo "$port"; return 0; fi
        port=$(( port + 1 ))
    done
    die "no free port in $1..$last"
}

state_get() { [ -f "$STATE" ] && sed -n "s/^$1=//p" "$STATE" | tail -n1; }

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# Stop a process by pid if its command line still names the program we started (the pid
# may have been reused since an aborted run).
kill_pid() {
    local pid="$1" name="$2" i
    pid_alive "$pid" || return 0
    grep -q "$name" "/proc/$pid/cmdline" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do pid_alive "$pid" || return 0; sleep 0.1; done
    log "$name ($pid) ignored SIGTERM; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do pid_alive "$pid" || return 0; sleep 0.1; done
}

socket_dir() {
    # Unix socket paths are limited to ~107 bytes: use a short /tmp folder when the
    # repository path is long.
    local d="$PG_DIR/sock"
    if [ "${#d}" -gt 80 ]; then d="/tmp/pgtest-$(echo "$DIR" | md5sum | cut -c1-12)"; fi
    echo "$d"
}

# --- commands ------------------------------------------------------------------------------------
cmd_stop() {
    local pg_pid redis_pid pg_bin pg_user
    pg_pid="$(state_get pg_pid || true)"
    redis_pid="$(state_get redis_pid || true)"
    pg_bin="$(state_get pg_bin || true)"
    pg_user="$(state_get pg_user || true)"
    # The postmaster's own pid file wins over ours: it is right even after a crash-restart.
    if [ -f "$PG_DIR/data/postmaster.pid" ]; then pg_pid="$(head -n1 "$PG_DIR/data/postmaster.pid")"; fi
    if pid_alive "$pg_pid"; then
        PG_USER="${pg_user:-$(stat -c %U "$PG_DIR/data" 2>/dev/null || id -un)}"
        if [ -n "$pg_bin" ] && [ -d "$PG_DIR/data" ]; then
            as_pg "$pg_bin/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
        fi
        kill_pid "$pg_pid" postgres
    fi
    if [ -f "$REDIS_DIR/redis.pid" ]; then redis_pid="$(cat "$REDIS_DIR/redis.pid")"; fi
    kill_pid "$redis_pid" redis-server
    if pid_alive "$pg_pid" || pid_alive "$redis_pid"; then die "could not stop the test services"; fi
    return 0
}

cmd_start() {
    ensure_binaries
    pick_pg_user
    cmd_stop
    rm -rf "$DIR"
    mkdir -p "$PG_DIR" "$REDIS_DIR"

    local pg_port redis_port sock
    pg_port="${TEST_PG_PORT:-$(first_free_port 55432)}"
    redis_port="${TEST_REDIS_PORT:-$(first_free_port 56379)}"
    sock="$(socket_dir)"
    mkdir -p "$sock"

    if [ "$(id -u)" = 0 ]; then
        chown -R "$PG_USER" "$PG_DIR" "$sock"
        as_pg test -w "$PG_DIR" || die "user $PG_USER cannot write $PG_DIR (is the repository readable by it?)"
    fi
    {
        echo "pg_bin=$PG_BIN"
        echo "pg_user=$PG_USER"
        echo "pg_port=$pg_port"
        echo "pg_socket_dir=$sock"
        echo "redis_port=$redis_port"
    } >"$STATE"

    # PostgreSQL: a fresh cluster, durability off (a test database is disposable), unless
    # TEST_PG_DURABLE=1: the fault suite crashes it and expects every acknowledged commit back.
    as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
        >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
    cat >>"$PG_DIR/data/postgresql.conf" <<EOF

# --- test-services.sh -------------------------------------------------------
port = $pg_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$sock'
max_connections = 300
EOF
    if [ "${TEST_PG_DURABLE:-0}" != 1 ]; then
        printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$PG_DIR/data/postgresql.conf"
    fi
    start_pg
    "$PG_BIN/psql" -h "$sock" -p "$pg_port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q <<EOF
CREATE ROLE "$DB_USER" LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
CREATE DATABASE "$DB_NAME" OWNER "$DB_USER";
EOF

    start_redis "$redis_port"
    log "PostgreSQL on 127.0.0.1:$pg_port (socket $sock, runs as $PG_USER), Redis on 127.0.0.1:$redis_port"
}

start_pg() {
    if ! as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 start >/dev/null; then
        cat "$PG_DIR/postgres.log" >&2 || true
        die "PostgreSQL did not start"
    fi
    echo "pg_pid=$(head -n1 "$PG_DIR/data/postmaster.pid")" >>"$STATE"
}

# Redis: no persistence (as `make run` runs it), its own port, daemonized with a pid file.
start_redis() {
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize yes --dir "$REDIS_DIR" --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" \
        || die "redis-server did not start"
    local i
    for i in $(seq 1 100); do
        if [ -s "$REDIS_DIR/redis.pid" ] && redis_ping "$1"; then break; fi
        sleep 0.1
    done
    redis_ping "$1" || { cat "$REDIS_DIR/redis.log" >&2; die "Redis does not answer on $1"; }
    echo "redis_pid=$(cat "$REDIS_DIR/redis.pid")" >>"$STATE"
}

# One service at a time, for the fault suite: the port, the data and the state file stay.
cmd_stop_redis() {
    local pid
    pid="$(cat "$REDIS_DIR/redis.pid" 2>/dev/null || state_get redis_pid || true)"
    kill_pid "$pid" redis-server
    rm -f "$REDIS_DIR/redis.pid"
}

cmd_start_redis() {
    [ -f "$STATE" ] || die "not started (run: $0 start)"
    start_redis "$(state_get redis_port)"
}

cmd_stop_pg() {
    [ -f "$STATE" ] || die "not started (run: $0 start)"
    PG_USER="$(state_get pg_user)"
    # immediate: like a crash or a failover, open connections break at once.
    as_pg "$(state_get pg_bin)/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop >/dev/null
}

cmd_start_pg() {
    [ -f "$STATE" ] || die "not started (run: $0 start)"
    PG_USER="$(state_get pg_user)"
    PG_BIN="$(state_get pg_bin)"
    start_pg
}

redis_ping() {
    if command -v redis-cli >/dev/null; then
        [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]
    else
        # bash's /dev/tcp: send PING, expect +PONG.
        exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null || return 1
        printf 'PING\r\n' >&3
        local reply=""
        read -r -t 2 reply <&3 || true
        exec 3<&- 3>&-
        [ "${reply%$'\r'}" = "+PONG" ]
    fi
}

cmd_env() {
    [ -f "$STATE" ] || die "not started (run: $0 start)"
    local pg_port redis_port
    pg_port="$(state_get pg_port)"
    redis_port="$(state_get redis_port)"
    echo "export DATABASE_URL=postgres://$DB_USER:$DB_PASSWORD@127.0.0.1:$pg_port/$DB_NAME"
    echo "export REDIS_URL=redis://127.0.0.1:$redis_port/0"
}

cmd_status() {
    local pg_pid redis_pid
    pg_pid="$(state_get pg_pid || true)"
    redis_pid="$(state_get redis_pid || true)"
    if pid_alive "$pg_pid"; then echo "postgres: running (pid $pg_pid)"; else echo "postgres: stopped"; fi
    if pid_alive "$redis_pid"; then echo "redis: running (pid $redis_pid)"; else echo "redis: stopped"; fi
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) cmd_env ;;
    status) cmd_status ;;
    stop-redis) cmd_stop_redis ;;
    start-redis) cmd_start_redis ;;
    stop-pg) cmd_stop_pg ;;
    start-pg) cmd_start_pg ;;
    *) echo "usage: $0 start|stop|env|status|stop-redis|start-redis|stop-pg|start-pg" >&2; exit 2 ;;
esac
