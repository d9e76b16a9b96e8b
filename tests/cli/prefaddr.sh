#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cli_options.c apps/cmd_perf.c apps/cmd_serve.c apps/perf_server.c src/io/workers.c
# --preferred-addr / --no-preferred-addr (RFC 9000 §9.6) on the command
# line: usage errors exit 2 naming the option, an address that cannot be
# bound exits 1 saying so (serve and perf server, also with --threads 2), `quack serve --threads 2
# --preferred-addr` moves quack get's downloads there byte-exact (every worker
# binds both addresses), and `quack perf` between two real sockets moves
# to the server's preferred address (127.0.0.2, loopback) unless the client
# declines (its --stats line says which). Loopback only.
# Usage: bash tests/cli/prefaddr.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: prefaddr.sh BUILD_DIR}
q="$build/quack"
source "$(dirname "$0")/lib/harness.bash"

expect() { # name want_rc want_stderr_substring cmd...
    local name=$1 want=$2 text=$3 rc=0
    shift 3
    timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -eq "$want" ] && grep -qF -- "$text" "$tmp/err"; then
        ok "$name"
    else
        no "$name: exit $rc (want $want), stderr: $(head -3 "$tmp/err")"
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$tmp/root"
expect "serve: --preferred-addr junk" 2 "--preferred-addr nowhere: want ADDR:PORT" \
    "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --preferred-addr nowhere
expect "serve: --preferred-addr without a port" 2 "--preferred-addr 127.0.0.2:0: want ADDR:PORT" \
    "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --preferred-addr 127.0.0.2:0
expect "serve: two IPv4 preferred addresses" 2 "at most one per address family" \
    "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --preferred-addr 127.0.0.2:5000 \
    --preferred-addr 127.0.0.3:5000
expect "serve: three --preferred-addr" 2 "at most one IPv4 and one IPv6 address" \
    "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --preferred-addr 127.0.0.2:5000 \
    --preferred-addr [::1]:5000 --preferred-addr 127.0.0.3:5000
expect "perf client: --preferred-addr" 2 "--preferred-addr is a server option" \
    "$q" perf client --connect 127.0.0.1:9 --insecure --preferred-addr 127.0.0.2:5000
expect "perf server: --no-preferred-addr" 2 "--no-preferred-addr is a client option" \
    "$q" perf server --listen 127.0.0.1:0 --no-preferred-addr
# a preferred address already in use: said, exit 1
busy=$(free_port)
python3 -c "import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.2', $busy)); open('$tmp/bound', 'w').close(); time.sleep(20)" &
pids+=($!)
for _ in $(seq 100); do [ -e "$tmp/bound" ] && break; sleep 0.1; done
expect "serve: preferred address in use" 1 "--preferred-addr 127.0.0.2:$busy: cannot listen there" \
    "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --preferred-addr "127.0.0.2:$busy"
expect "serve --threads 2: preferred address in use" 1 \
    "--preferred-addr 127.0.0.2:$busy: cannot listen there" \
    "$q" serve --threads 2 --root "$tmp/root" --listen 127.0.0.1:0 --preferred-addr "127.0.0.2:$busy"
# quack perf server runs on the same workers: the same refusal, both ways
for t in 1 2; do
    expect "perf server --threads $t: preferred address in use" 1 \
        "quack perf server: --preferred-addr 127.0.0.2:$busy: cannot listen there" \
        "$q" perf server --threads "$t" --listen 127.0.0.1:0 --preferred-addr "127.0.0.2:$busy"
done

# quack serve --threads 2 with a preferred address (one run path: every
# worker binds both addresses): quack get moves there, byte-exact
head -c 4000000 /dev/urandom >"$tmp/root/big.bin"
port2=$(free_port)
"$q" serve --threads 2 --stats --quiet --root "$tmp/root" --listen 127.0.0.1:0 \
    --preferred-addr "127.0.0.2:$port2" >"$tmp/serve.out" 2>"$tmp/serve.err" &
srv=$!
pids+=("$srv")
for _ in $(seq 100); do grep -q "^listening on" "$tmp/serve.out" 2>/dev/null && break; sleep 0.1; done
check "serve --threads 2 prints its preferred address and 2 threads" \
    "grep -qx 'preferred address 127.0.0.2:$port2' '$tmp/serve.out' && grep -q '^listening on .*, 2 threads' '$tmp/serve.out'"
saddr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$tmp/serve.out")
pin=$(sed -n 's/^pin: //p' "$tmp/serve.out")
for i in 1 2 3; do
    rm -rf "$tmp/get" && mkdir -p "$tmp/get"
    rc=0
    timeout 60 "$q" get --pin "$pin" --output "$tmp/get" "https://$saddr/big.bin" \
        >"$tmp/get.out" 2>"$tmp/get$i.err" || rc=$?
    check "serve --threads 2, get $i: moved to 127.0.0.2:$port2, byte-exact" \
        "[ $rc -eq 0 ] && grep -q \"moved to the server's preferred address 127.0.0.2:$port2\" '$tmp/get$i.err' && cmp -s '$tmp/root/big.bin' '$tmp/get/big.bin'"
done
kill -TERM "$srv"
rc=0
wait "$srv" || rc=$?
echo "# $(grep '^workers:' "$tmp/serve.err")"
check "serve --threads 2 exits 0 on SIGTERM, no stateless reset sent" \
    "[ $rc -eq 0 ] && [ \$(grep -c 'resets_sent 0 ' '$tmp/serve.err') -eq 2 ]"

# quack perf, client -> server with a preferred address, both ways of the flag
port=$(free_port)
port2=$(free_port)
"$q" perf server --listen "127.0.0.1:$port" --preferred-addr "127.0.0.2:$port2" --quiet \
    >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
pids+=($srv)
for _ in $(seq 50); do grep -q "^listening on" "$tmp/srv.out" 2>/dev/null && break; sleep 0.1; done
check "perf server prints its preferred address" "grep -qx 'preferred address 127.0.0.2:$port2' '$tmp/srv.out'"
for flag in "" --no-preferred-addr; do
    rc=0
    # shellcheck disable=SC2086
    timeout 20 "$q" perf client --connect "127.0.0.1:$port" --insecure --download-size 4M \
        --upload-size 1K --stats --quiet $flag >"$tmp/cli.out" 2>"$tmp/cli.err" || rc=$?
    want="moved"
    [ -n "$flag" ] && want="none"
    check "perf client ${flag:-(default)}: exit 0" "[ $rc -eq 0 ]"
    check "perf client ${flag:-(default)}: preferred address $want" \
        "grep -q 'stats: path migrations [01], validations [01]; preferred address $want' '$tmp/cli.out' '$tmp/cli.err'"
done
kill -TERM "$srv"
rc=0
wait "$srv" || rc=$?
check "perf server exits 0 on SIGTERM" "[ $rc -eq 0 ]"
[ "$fails" -eq 0 ]
