# A throwaway Postgres server for the journal's tests. Source it, then call
# `postgres_start`: it installs Postgres from the distribution's packages
# where it is missing, starts a server on a free local port with a fresh
# data directory, creates a database and exports its URL as
# TOOL_RUNTIME_TEST_POSTGRES_URL. `postgres_stop` stops it and removes the
# directory (.ci/run calls it from a trap). Used the same way by .ci/run and
# by a developer:
#
#   source .ci/postgres.sh && postgres_start
#   cargo test -p tool-runtime --features postgres --test suite journal::
#   postgres_stop

postgres_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

# Runs a command as the `postgres` user when we are root (initdb refuses
# root), as ourselves otherwise.
postgres_as() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

postgres_start() {
    local bin port
    bin=$(postgres_bin)
    if [ -z "$bin" ] && ! command -v pg_ctl >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        bin=$(postgres_bin)
    fi
    if [ -z "$bin" ]; then
        bin=$(dirname "$(command -v pg_ctl)")
    fi
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    POSTGRES_DIR=$(mktemp -d /tmp/tool-runtime-postgres.XXXXXX)
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$POSTGRES_DIR"
    fi
    postgres_as "$bin/initdb" -D "$POSTGRES_DIR/data" -U postgres --auth=trust >/dev/null
    postgres_as "$bin/pg_ctl" -D "$POSTGRES_DIR/data" -l "$POSTGRES_DIR/log" -w \
        -o "-p $port -k $POSTGRES_DIR -c listen_addresses=127.0.0.1" start >/dev/null
    POSTGRES_PG_CTL="$bin/pg_ctl"
    postgres_as "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres journal_test
    export TOOL_RUNTIME_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/journal_test"
    echo "postgres: $TOOL_RUNTIME_TEST_POSTGRES_URL (data in $POSTGRES_DIR)"
}

postgres_stop() {
    if [ -n "${POSTGRES_DIR:-}" ] && [ -d "$POSTGRES_DIR/data" ]; then
        postgres_as "$POSTGRES_PG_CTL" -D "$POSTGRES_DIR/data" -m fast -w stop >/dev/null || true
        rm -rf "$POSTGRES_DIR"
    fi
    POSTGRES_DIR=
}
