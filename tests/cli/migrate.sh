#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_get.c apps/cmd_serve.c
# quack get --migrate-every against servers that allow and that forbid
# active migration (RFC 9000 §9, §18.2 disable_active_migration):
#  1. `quack serve --disable-active-migration` (listed in --help): a 100 MB
#     download with --migrate-every 0.2 is byte-exact (SHA-256), the client
#     never changes its port ("migrations: 0") and says so in exactly one
#     stderr line, not one per attempt (qk_conn_migrate refuses with
#     QK_ERR_UNSUPPORTED and the client keeps its socket);
#  2. a default `quack serve`: the same download is byte-exact after more
#     than zero migrations, and no refusal is logged.
# Judged by bytes and counts, never by how long a download took.
# $1 = build dir.
set -uo pipefail
build=${1:?usage: migrate.sh BUILD_DIR}
source "$(dirname "$0")/lib/harness.bash"
size=100000000 # the 100 MB of the report that asked for this test

mkdir -p "$tmp/root"
head -c "$size" /dev/urandom >"$tmp/root/big.bin"
want=$(sha256sum <"$tmp/root/big.bin" | cut -d' ' -f1)
pick_ports PORT_OFF PORT_ON

check "serve --help lists --disable-active-migration" \
    "'$q' serve --help | grep -- '--disable-active-migration' >/dev/null"

# start_serve NAME PORT [OPTION...]: quack serve on 127.0.0.1:PORT, up (its
# socket open and its pin printed) when this returns.
start_serve() {
    local name=$1 port=$2
    shift 2
    "$q" serve --quiet --root "$tmp/root" --listen "127.0.0.1:$port" "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
    pids+=($!)
    wait_udp "$port" && wait_line "$tmp/$name.out" '^listening on' ||
        no "quack serve $* did not listen on $port: $(head -3 "$tmp/$name.err")"
}

# download NAME PORT: quack get --migrate-every 0.2 of big.bin into
# $tmp/NAME/; sets rc, sum (SHA-256 of the file) and moves ("migrations: N").
download() {
    local name=$1 port=$2 pin
    pin=$(sed -n 's/^pin: //p' "$tmp/serve_$name.out")
    mkdir -p "$tmp/$name"
    rc=0
    # the timeout only ends a hung run; nothing below looks at the time taken
    timeout 600 "$q" get --quiet --migrate-every 0.2 --pin "$pin" --output "$tmp/$name" \
        "https://127.0.0.1:$port/big.bin" 2>"$tmp/$name.err" || rc=$?
    sum=$(sha256sum <"$tmp/$name/big.bin" 2>/dev/null | cut -d' ' -f1)
    moves=$(sed -n 's/^migrations: \([0-9]*\).*/\1/p' "$tmp/$name.err")
    sed 's/^/# /' "$tmp/$name.err"
}

refusals() { grep -c 'disabled active migration' "$1"; }

start_serve serve_off "$PORT_OFF" --disable-active-migration
download off "$PORT_OFF"
check "disable_active_migration: get exits 0" "[ $rc -eq 0 ]"
check "disable_active_migration: 100 MB byte-exact (SHA-256)" "[ '$sum' = $want ]"
check "disable_active_migration: migrations: 0" "[ '$moves' = 0 ]"
check "disable_active_migration: exactly one line says the server refused" \
    "[ \$(refusals '$tmp/off.err') -eq 1 ]"

start_serve serve_on "$PORT_ON"
download on "$PORT_ON"
check "default server: get exits 0" "[ $rc -eq 0 ]"
check "default server: 100 MB byte-exact (SHA-256)" "[ '$sum' = $want ]"
check "default server: migrations counted (${moves:-none} > 0)" "[ '${moves:-0}' -gt 0 ]"
check "default server: no refusal logged" "[ \$(refusals '$tmp/on.err') -eq 0 ]"
[ "$fails" -eq 0 ]
