#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cli_errors.c src/io/udp.c src/io/driver.c src/crypto/tls_gnutls.c
# Errors that say what to fix, for quack get, serve, perf
# and tunnel: each message's key words and each exit code. A pin mismatch
# names both keys; an untrusted certificate says so and gives the --pin that
# would trust it; no common cipher suite / ALPN lists both sides; a handshake
# timeout is settable; ICMP port unreachable fails at once; usage errors
# exit 2 naming the option; --insecure warns; servers log failed handshakes
# with the peer's address; quack serve counts only finished responses. And
# item 7: on SIGTERM the server's qlog is complete JSON-SEQ ending with the
# last connection's connection_closed (code and reason).
# Usage: bash tests/cli/errors.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: errors.sh BUILD_DIR}
q="$build/quack"
source "$(dirname "$0")/lib/harness.bash"
ZERO=0000000000000000000000000000000000000000000000000000000000000000

# run NAME WANT_RC CMD...: run CMD (10 s bound) with stderr in $tmp/err and
# the wall time in $ms; reports a wrong exit status.
run() {
    local name=$1 want=$2 rc=0 t0
    shift 2
    t0=$(date +%s%N)
    timeout 20 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" -eq "$want" ]; then ok "$name: exit $rc"; else no "$name: exit $rc (want $want): $(head -c 600 "$tmp/err")"; fi
}
# has NAME TEXT...: every TEXT is in $tmp/err.
has() {
    local name=$1 t
    shift
    for t in "$@"; do
        if ! grep -qF -- "$t" "$tmp/err"; then
            no "$name: no '$t' in: $(head -c 600 "$tmp/err")"
            return
        fi
    done
    ok "$name: says ${*:1:2}"
}
port_of() { # FILE: the port of its "listening on ADDR:PORT" line
    for _ in $(seq 100); do
        p=$(sed -n 's/^listening on [^ ]*:\([0-9]*\) .*/\1/p' "$1" | head -1)
        [ -n "$p" ] && { echo "$p"; return; }
        sleep 0.05
    done
}
# logged NAME REGEX FILE: a line matching REGEX appears in FILE within 5 s
# (a server learns of a failed handshake when its closing period ends).
logged() {
    for _ in $(seq 100); do
        grep -q -- "$2" "$3" && { ok "$1"; return; }
        sleep 0.05
    done
    no "$1: no /$2/ in: $(head -c 600 "$3")"
}
pin_of() { sed -n 's/^pin: //p' "$1" | head -1; }
free_udp_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp/root" "$tmp/qlog"
echo hello >"$tmp/root/a.txt"
truncate -s 1G "$tmp/root/big.bin"

# Servers: HTTP/3 (one with only ChaCha20), perf, tunnel.
"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --qlog "$tmp/qlog" >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
pids+=($serve_pid)
"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --ciphers TLS_CHACHA20_POLY1305_SHA256 \
    >"$tmp/serve2.out" 2>"$tmp/serve2.err" &
serve2_pid=$!
pids+=($serve2_pid)
"$q" perf server --listen 127.0.0.1:0 >"$tmp/perf.out" 2>"$tmp/perf.err" &
pids+=($!)
"$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:9 >"$tmp/tun.out" 2>"$tmp/tun.err" &
pids+=($!)
S=$(port_of "$tmp/serve.out") S2=$(port_of "$tmp/serve2.out")
P=$(port_of "$tmp/perf.out") T=$(port_of "$tmp/tun.out")
SPIN=$(pin_of "$tmp/serve.out") PPIN=$(pin_of "$tmp/perf.out") TPIN=$(pin_of "$tmp/tun.out")
check "servers up" '[ -n "$S" ] && [ -n "$S2" ] && [ -n "$P" ] && [ -n "$T" ] && [ -n "$SPIN" ]'
# A UDP socket that never answers (handshake timeouts), a port with nothing.
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$tmp/sink.out" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/sink.out" ] && break; sleep 0.05; done
SINK=$(cat "$tmp/sink.out")
NONE=$(free_udp_port)

tclient=("$q" tunnel client --listen 127.0.0.1:0 --reconnect-max 0)

# 1. A pin mismatch names both keys (expected and presented).
run "get: pin mismatch" 1 "$q" get --pin $ZERO --discard "https://127.0.0.1:$S/a.txt"
has "get: pin mismatch" "certificate pin mismatch" "expected SPKI SHA-256 $ZERO" "server presented $SPIN" "check --pin"
run "perf: pin mismatch" 1 "$q" perf client --pin $ZERO --connect "127.0.0.1:$P" --quiet
has "perf: pin mismatch" "certificate pin mismatch" "expected SPKI SHA-256 $ZERO" "server presented $PPIN"
run "tunnel: pin mismatch" 1 "${tclient[@]}" --pin $ZERO --connect "127.0.0.1:$T"
has "tunnel: pin mismatch" "certificate pin mismatch" "expected SPKI SHA-256 $ZERO" "server presented $TPIN"
# ... and the servers log the failed handshake: the peer's address and why.
logged "serve logs a failed handshake (peer, reason)" \
    "quack serve: handshake failed with 127.0.0.1:[0-9]*: the client closed the connection: certificate pin mismatch" "$tmp/serve.err"
logged "perf server logs a failed handshake" \
    "quack perf server: handshake failed with 127.0.0.1:[0-9]*: .*certificate pin mismatch" "$tmp/perf.err"
logged "tunnel server logs a failed handshake" \
    "quack tunnel server: handshake failed with 127.0.0.1:[0-9]*: .*certificate pin mismatch" "$tmp/tun.err"

# 2. An untrusted certificate says so and gives the --pin that trusts it
# (get verifies against the system CAs; perf and tunnel always pin).
run "get: untrusted certificate" 1 "$q" get --discard "https://127.0.0.1:$S/a.txt"
has "get: untrusted certificate" "untrusted certificate" "use --pin $SPIN" "--insecure"

# 3. No common cipher suite: both lists (get and serve have --ciphers).
run "get: no common cipher suite" 1 "$q" get --pin "$(pin_of "$tmp/serve2.out")" --discard \
    --ciphers TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384 "https://127.0.0.1:$S2/a.txt"
has "get: no common cipher suite" "no common TLS cipher suite" \
    "client offers TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384" "server accepts TLS_CHACHA20_POLY1305_SHA256"
logged "serve logs the cipher mismatch" \
    "handshake failed with 127.0.0.1:[0-9]*: no common TLS cipher suite: client offers" "$tmp/serve2.err"

# 4. ALPN mismatch: what we offered and what the server accepts.
run "get: ALPN mismatch" 1 "$q" get --pin "$PPIN" --discard "https://127.0.0.1:$P/a.txt"
has "get: ALPN mismatch" "ALPN mismatch: client offers h3; server accepts perf"
run "perf: ALPN mismatch" 1 "$q" perf client --pin "$SPIN" --connect "127.0.0.1:$S" --quiet
has "perf: ALPN mismatch" "ALPN mismatch: client offers perf; server accepts h3"
# (the tunnel speaks h3 over UDP: against quack serve it is a client whose
# CONNECT is answered 405; tests/interop/tunnel_masquerade.sh checks that)
run "tunnel: ALPN mismatch" 1 "${tclient[@]}" --pin "$PPIN" --connect "127.0.0.1:$P"
has "tunnel: ALPN mismatch" "ALPN mismatch: client offers h3; server accepts perf"

# 5. Handshake timeout, settable (a peer that never answers).
run "get: handshake timeout" 1 "$q" get --insecure --handshake-timeout 1s --discard "https://127.0.0.1:$SINK/a.txt"
has "get: handshake timeout" "handshake timeout: not complete after 1.0 s" "--handshake-timeout"
check "get: gave up after about 1 s ($ms ms)" '[ "$ms" -ge 900 ] && [ "$ms" -lt 5000 ]'
run "perf: handshake timeout" 1 "$q" perf client --insecure --handshake-timeout 1s --connect "127.0.0.1:$SINK" --quiet
has "perf: handshake timeout" "handshake timeout: not complete after 1.0 s"
check "perf: gave up after about 1 s ($ms ms)" '[ "$ms" -ge 900 ] && [ "$ms" -lt 5000 ]'
run "tunnel: handshake timeout" 1 "${tclient[@]}" --insecure --handshake-timeout 1s --connect "127.0.0.1:$SINK"
has "tunnel: handshake timeout" "handshake timeout: not complete after 1.0 s"
check "tunnel: gave up after about 1 s ($ms ms)" '[ "$ms" -ge 900 ] && [ "$ms" -lt 5000 ]'

# An idle timeout, settable: quack get holds a connection (--stall 20) to a
# server (the ChaCha20 one) that then stops (SIGSTOP): --idle-timeout 1s ends it after about
# 1 s (RFC 9000 §10.1: at least 3 PTOs), not at 20 s or the default 30 s.
"$q" get --pin "$(pin_of "$tmp/serve2.out")" --stall 20 --idle-timeout 1s --discard \
    "https://127.0.0.1:$S2/a.txt" \
    >"$tmp/idle.out" 2>"$tmp/idle.err" &
gpid=$!
for _ in $(seq 100); do grep -q '^connected' "$tmp/idle.err" 2>/dev/null && break; sleep 0.1; done
kill -STOP "$serve2_pid"
t0=$(date +%s%N)
wait "$gpid"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$serve2_pid"
check "get: --idle-timeout 1s closed the connection (exit $rc, $ms ms): $(grep -o 'connection closed: [a-z ]*' "$tmp/idle.err")" \
    "[ $rc -eq 1 ] && grep -q 'connection closed: idle timeout' $tmp/idle.err && [ $ms -lt 10000 ]"

# 6. Nothing listening: ICMP port unreachable fails at once (the default
# handshake timeout is 10 s; 5 s leaves room for ASan start-up on a busy machine).
R="connection refused: nothing listening on 127.0.0.1:$NONE (ICMP port unreachable)"
run "get: nothing listening" 1 "$q" get --insecure --discard "https://127.0.0.1:$NONE/a.txt"
has "get: nothing listening" "$R"
check "get: failed fast ($ms ms)" '[ "$ms" -lt 5000 ]'
run "perf: nothing listening" 1 "$q" perf client --insecure --connect "127.0.0.1:$NONE" --quiet
has "perf: nothing listening" "$R"
check "perf: failed fast ($ms ms)" '[ "$ms" -lt 5000 ]'
run "tunnel: nothing listening" 1 "${tclient[@]}" --insecure --connect "127.0.0.1:$NONE"
has "tunnel: nothing listening" "$R"
check "tunnel: failed fast ($ms ms)" '[ "$ms" -lt 5000 ]'

# 7. --insecure warns on stderr (every client).
run "get --insecure" 0 "$q" get --insecure --discard "https://127.0.0.1:$S/a.txt"
has "get --insecure" "warning: --insecure" "NOT verified"
run "perf --insecure" 0 "$q" perf client --insecure --connect "127.0.0.1:$P" --download-size 1K --upload-size 1K --quiet
has "perf --insecure" "warning: --insecure" "NOT verified"
run "tunnel --insecure" 1 "${tclient[@]}" --insecure --connect "127.0.0.1:$NONE"
has "tunnel --insecure" "warning: --insecure" "NOT verified"

# 8. Usage errors exit 2 and name the option.
run "get: bad port" 2 "$q" get --insecure "https://127.0.0.1:99999/a.txt"
has "get: bad port" "URL 127.0.0.1:99999: bad port '99999'"
run "serve: bad port" 2 "$q" serve --root "$tmp/root" --listen 127.0.0.1:70000
has "serve: bad port" "--listen 127.0.0.1:70000: bad port"
run "perf: bad port" 2 "$q" perf client --insecure --connect 127.0.0.1:70000
has "perf: bad port" "--connect 127.0.0.1:70000: bad port"
run "perf server: bad port" 2 "$q" perf server --listen 127.0.0.1:x
has "perf server: bad port" "--listen 127.0.0.1:x: bad port"
run "tunnel: bad port" 2 "$q" tunnel client --insecure --connect 127.0.0.1:70000 --listen 127.0.0.1:0
has "tunnel: bad port" "--connect 127.0.0.1:70000: bad port"
run "get: bad version" 2 "$q" get --insecure --quic-version 0x1a2a3a4a "https://127.0.0.1:$S/a.txt"
has "get: bad version" "--quic-version 0x1a2a3a4a: version must be"
run "serve: bad version" 2 "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --quic-version v9
has "serve: bad version" "--quic-version v9"
run "get: bad output path" 2 "$q" get --insecure --output "$tmp/nonexistent" "https://127.0.0.1:$S/a.txt"
has "get: bad output path" "--output $tmp/nonexistent: not a directory"
run "serve: bad --root" 2 "$q" serve --root "$tmp/nonexistent" --listen 127.0.0.1:0
has "serve: bad --root" "--root $tmp/nonexistent"
run "serve: unreadable --cert" 2 "$q" serve --root "$tmp/root" --listen 127.0.0.1:0 \
    --cert "$tmp/none.pem" --key "$tmp/none.key"
has "serve: unreadable --cert" "--cert $tmp/none.pem: cannot read it"
run "perf: bad --qlog" 2 "$q" perf client --insecure --connect 127.0.0.1:9 --qlog "$tmp/root/a.txt"
has "perf: bad --qlog" "--qlog $tmp/root/a.txt: not a directory"
run "tunnel: bad --qlog" 2 "$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:9 --qlog "$tmp/nonexistent"
has "tunnel: bad --qlog" "--qlog $tmp/nonexistent: no such directory"
run "get: bad --qlog" 2 "$q" get --insecure --qlog "$tmp/nonexistent" "https://127.0.0.1:$S/a.txt"
has "get: bad --qlog" "--qlog $tmp/nonexistent"
run "get: bad cipher" 2 "$q" get --insecure --ciphers TLS_AES_128_CCM_8_SHA256 "https://127.0.0.1:$S/a.txt"
has "get: bad cipher" "--ciphers TLS_AES_128_CCM_8_SHA256"
for cmd in "get https://127.0.0.1:9/" "serve --root $tmp/root --listen 127.0.0.1:0" \
    "perf client --insecure --connect 127.0.0.1:9" \
    "tunnel client --insecure --connect 127.0.0.1:9 --listen 127.0.0.1:0"; do
    c=${cmd%% *}
    # shellcheck disable=SC2086
    run "$c: unknown option" 2 "$q" $cmd --frobnicate x
    has "$c: unknown option" "--frobnicate"
done
run "get: missing argument" 2 "$q" get --insecure https://127.0.0.1:9/ --output
has "get: missing argument" "--output needs a value"
run "serve: missing argument" 2 "$q" serve --listen 127.0.0.1:0 --root
has "serve: missing argument" "--root needs a value"
run "perf: missing argument" 2 "$q" perf client --insecure --connect
has "perf: missing argument" "--connect needs a value"
run "tunnel: missing argument" 2 "$q" tunnel client --insecure --listen 127.0.0.1:0 --connect
has "tunnel: missing argument" "--connect needs a value"
for c in get perf tunnel; do
    case $c in
    get) args=(get --insecure https://127.0.0.1:9/) ;;
    perf) args=(perf client --insecure --connect 127.0.0.1:9) ;;
    tunnel) args=(tunnel client --insecure --connect 127.0.0.1:9 --listen 127.0.0.1:0) ;;
    esac
    run "$c: bad --handshake-timeout" 2 "$q" "${args[@]}" --handshake-timeout soon
    has "$c: bad --handshake-timeout" "--handshake-timeout soon"
done

# 9. quack serve counts a response as served only when all of it went out:
# a 1 GiB download in progress when the server stops is "not finished".
"$q" get --pin "$SPIN" --discard --quiet --max-data 64K "https://127.0.0.1:$S/big.bin" \
    >/dev/null 2>"$tmp/big.err" &
big=$!
pids+=($big)
for _ in $(seq 100); do grep -q "GET /big.bin" "$tmp/serve.err" && break; sleep 0.05; done
sleep 0.3
kill -TERM "$serve_pid"
for _ in $(seq 100); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.05; done
kill "$big" 2>/dev/null
check "serve stopped on SIGTERM" '! kill -0 "$serve_pid" 2>/dev/null'
check "serve: the interrupted download is not counted as served" \
    'grep -q "stopped; 1 files served, 0 error responses, 1 responses not finished" "$tmp/serve.err"'
check "serve logs the unfinished response" \
    'grep -q "GET /big.bin stream 0: response not finished" "$tmp/serve.err"'

# 10. qlog on SIGTERM: every server trace is JSON-SEQ to its last byte and
# ends with connection_closed carrying code and reason; the one of the
# download cut by SIGTERM too.
n=0 bad=0
for f in "$tmp"/qlog/*_server.sqlog; do
    n=$((n + 1))
    if ! tr '\036' '\n' <"$f" | jq -e . >/dev/null 2>&1 || [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" != '\n' ]; then
        bad=$((bad + 1))
        no "qlog $f: not valid JSON-SEQ to the end"
        continue
    fi
    last=$(tail -c 2000 "$f" | tr '\036' '\n' | tail -1)
    if ! echo "$last" | jq -e '.name == "connectivity:connection_closed" and
            (.data.connection_code // .data.application_code) != null and
            (.data.reason | type == "string")' >/dev/null 2>&1; then
        bad=$((bad + 1))
        no "qlog $f: the last record is not connection_closed with code and reason: $last"
    fi
done
check "qlog: $n server traces, all complete JSON-SEQ ending in connection_closed" '[ "$n" -ge 5 ] && [ "$bad" -eq 0 ]'
big_trace=$(grep -l "endpoint freed with the connection open" "$tmp"/qlog/*_server.sqlog | head -1)
check "qlog: the trace of the download cut by SIGTERM was flushed to its end" \
    '[ -n "$big_trace" ] && [ "$(stat -c %s "$big_trace")" -gt 100000 ]'
[ "$fails" -eq 0 ]
