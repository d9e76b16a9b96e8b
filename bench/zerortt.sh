#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What resumption and 0-RTT save (RFC 9001 §4.5-4.6): `quack get` of one small
# file through `quack netem --delay D` (both directions), against quack serve
# and ngtcp2's gtlsserver, in three modes:
#   full     no session: a full handshake, the request after it
#   resumed  --session-file --no-early-data: PSK handshake, request after it
#   0-RTT    --session-file: the request in 0-RTT packets
# The figure is the time from the start of the connection to the response's
# last byte (the STREAM frame with FIN on stream 0), read from quack get's
# qlog, median of N runs per cell (modes alternate within each run). Every
# download is checked byte-exact (sha256). Writes the table into docs/0rtt.md
# between the "zerortt.sh" markers unless --no-doc.
# usage: bench/zerortt.sh [BUILD_DIR (build/release)] [--runs N (5)] [--delay D (25ms)]
#                         [--size BYTES (1024)] [--no-doc]
set -uo pipefail
build=build/release
runs=5
delay=25ms
size=1024
doc=1
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift ;;
    --delay) delay=$2; shift ;;
    --size) size=$2; shift ;;
    --no-doc) doc=0 ;;
    -*) echo "zerortt.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/lib/h3_netem.bash" # h3_bench_setup, start_h3_server, start_netem, median, ...
h3_bench_setup zerortt "$build" "$size" gtlsserver openssl python3

# Response time (ms) from a qlog: first received STREAM frame on stream 0 with FIN.
response_ms() {
    python3 - "$1" <<'EOF'
import json, sys, glob
for path in glob.glob(sys.argv[1] + "/*"):
    for rec in open(path, encoding="utf-8").read().split("\x1e"):
        rec = rec.strip()
        if not rec:
            continue
        ev = json.loads(rec)
        if ev.get("name") != "transport:packet_received":
            continue
        for f in ev.get("data", {}).get("frames", []):
            if f.get("frame_type") == "stream" and f.get("stream_id") == 0 and f.get("fin"):
                print("%.1f" % ev["time"])
                sys.exit(0)
sys.exit(1)
EOF
}

# One download in a mode; prints the response time or exits on failure.
one() { # mode authority session-file
    local mode=$1 auth=$2 sess=$3 opts=()
    rm -rf "$work/q" "$work/out" && mkdir -p "$work/q" "$work/out"
    case $mode in
    full) ;;
    prep) rm -f "$sess" && opts=(--session-file "$sess") ;;
    resumed) opts=(--session-file "$sess" --no-early-data) ;;
    0rtt) opts=(--session-file "$sess") ;;
    esac
    timeout 30 "$Q" get --insecure --output "$work/out" --qlog "$work/q" "${opts[@]}" \
        "https://$auth/f.bin" >"$work/get.log" 2>&1 ||
        { echo "zerortt.sh: quack get ($mode) failed: $(head -1 "$work/get.log")" >&2; exit 1; }
    [ "$(sha256sum <"$work/out/f.bin" | cut -d' ' -f1)" = "$want" ] ||
        { echo "zerortt.sh: $mode download differs" >&2; exit 1; }
    case $mode in
    0rtt) grep -q '0-RTT accepted' "$work/get.log" || { echo "zerortt.sh: 0-RTT not accepted" >&2; exit 1; } ;;
    resumed) grep -q 'session resumed$' "$work/get.log" || { echo "zerortt.sh: not resumed" >&2; exit 1; } ;;
    esac
    response_ms "$work/q"
}

declare -A res
for server in quack ngtcp2; do
    sport=$(free_port)
    nport=$(free_port)
    start_h3_server "$server" "$sport" "$work/serve.log" ||
        { echo "zerortt.sh: $server server did not start" >&2; exit 1; }
    start_netem "$nport" "$sport" --delay "$delay" ||
        { echo "zerortt.sh: netem did not start" >&2; exit 1; }
    sess="$work/$server.sess"
    # Each run with --session-file stores the new ticket it received, so
    # every resumption uses a fresh one (0-RTT tickets are single-use).
    one prep "127.0.0.1:$nport" "$sess" >/dev/null || exit 1
    for _ in $(seq "$runs"); do
        for mode in full resumed 0rtt; do
            t=$(one "$mode" "127.0.0.1:$nport" "$sess") || exit 1
            res[$server.$mode]+="$t "
        done
    done
    kill "$npid" "$spid" 2>/dev/null
    wait "$npid" "$spid" 2>/dev/null
done

rtt_ms=$(echo "$delay" | sed 's/ms$//' | awk '{print 2 * $1}')
table=$(
    echo "| server | full handshake | resumed, no 0-RTT | 0-RTT |"
    echo "|---|---|---|---|"
    for server in quack ngtcp2; do
        row="| $( [ "$server" = quack ] && echo 'quack serve' || echo 'ngtcp2 gtlsserver') "
        for mode in full resumed 0rtt; do
            m=$(echo "${res[$server.$mode]}" | tr ' ' '\n' | grep . | median)
            row+="| $m ms "
        done
        echo "$row|"
    done
)
echo "$table"
if [ "$doc" = 1 ]; then
    d="$src/docs/0rtt.md"
    {
        echo "<!-- zerortt.sh begin: written by bench/zerortt.sh, do not edit by hand -->"
        echo "Response time of \`quack get\` for one ${size}-byte file through \`quack netem --delay $delay\`"
        echo "(RTT ${rtt_ms} ms), from the start of the connection to the response's last byte (client qlog),"
        echo "median of $runs runs per cell, $(date -u +%Y-%m-%d), build \`$(basename "$build")\`:"
        echo
        echo "$table"
        echo "<!-- zerortt.sh end -->"
    } >"$work/section"
    replace_doc_section "$d" zerortt.sh "$work/section" || exit 1
    echo "docs/0rtt.md updated"
fi
