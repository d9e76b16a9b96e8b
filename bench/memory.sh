#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Memory per idle connection: `quack serve` vs ngtcp2's gtlsserver (HTTP/3,
# Debian ngtcp2 0.12), same run. Each round starts the server, reads its
# resident set (VmRSS) once it listens, opens CONNS connections with
# bench_conns (handshake done, ALPN h3, nothing requested; 100 client ports)
# and holds them HOLD seconds while sampling the server's VmRSS every 0.1 s;
# bytes per connection = (peak - idle) / CONNS. Servers alternate, rounds
# are medians. Writes its table into docs/perf.md between the "memory.sh"
# markers unless --no-doc.
# usage: bench/memory.sh [BUILD_DIR (build/release)] [--conns N (1000)]
#                        [--rounds R (3)] [--hold S (3)] [--no-doc]
set -uo pipefail
build=build/release
conns=1000
rounds=3
hold=3
doc=1
while [ $# -gt 0 ]; do
    case $1 in
    --conns) conns=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --hold) hold=$2; shift ;;
    --no-doc) doc=0 ;;
    -*) echo "memory.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
case $conns in '' | *[!0-9]*) echo "memory.sh: --conns wants a number" >&2; exit 2 ;; esac
[ "$conns" -ge 100 ] || { echo "memory.sh: --conns wants at least 100" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/lib/h3_netem.bash" # h3_bench_setup, start_h3_server, free_port, median, ...
load0=$(cut -d' ' -f1 /proc/loadavg)
h3_bench_setup memory "$build" 1024 gtlsserver openssl
B="$build/bench_conns"
[ -x "$B" ] || { echo "memory.sh: $B missing; run 'make release' first" >&2; exit 1; }

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# One round: prints "bytes_per_conn idle_kb peak_kb connect_s" or FAIL.
run_one() { # quack|ngtcp2
    local who=$1 port idle peak r out
    port=$(free_port)
    start_h3_server "$who" "$port" "$work/serve.$who.log" || { echo FAIL; return; }
    sleep 0.5
    idle=$(rss_kb "$spid")
    "$B" "127.0.0.1:$port" "$conns" 100 "$hold" 60 >"$work/conns.out" 2>"$work/conns.err" &
    local bpid=$!
    peak=$idle
    while kill -0 "$bpid" 2>/dev/null; do
        r=$(rss_kb "$spid")
        [ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r
        sleep 0.1
    done
    wait "$bpid"
    local rc=$?
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    out=$(cat "$work/conns.out")
    if [ "$rc" != 0 ]; then
        echo "memory.sh: $who: $out $(sort "$work/conns.err" | uniq -c | head -3)" >&2
        echo FAIL
        return
    fi
    local t
    t=$(sed -n 's/.* in \([0-9.]*\) s.*/\1/p' <<<"$out")
    echo "$(((peak - idle) * 1024 / conns)) $idle $peak $t"
}

declare -A per idle peak
for i in $(seq "$rounds"); do
    for who in quack ngtcp2; do
        r=$(run_one "$who")
        echo "round $i: $who $r" >&2
        [ "$r" = FAIL ] && { echo "memory.sh: round $i $who failed" >&2; exit 1; }
        read -r b id pk _ <<<"$r"
        per[$who]+="$b "
        idle[$who]+="$id "
        peak[$who]+="$pk "
    done
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
qm=$(med "${per[quack]}")
nm=$(med "${per[ngtcp2]}")
ratio=$(awk -v q="$qm" -v n="$nm" 'BEGIN { printf "%.2f", q / n }')
load1=$(cut -d' ' -f1 /proc/loadavg)
head=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
kib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1024 }'; }
table="| server | bytes per connection, rounds | median | idle RSS (KiB) | peak RSS (KiB) |
|---|---|---:|---:|---:|
| quack serve | ${per[quack]% } | **$(kib "$qm") KiB** | $(med "${idle[quack]}") | $(med "${peak[quack]}") |
| gtlsserver (ngtcp2 0.12) | ${per[ngtcp2]% } | **$(kib "$nm") KiB** | $(med "${idle[ngtcp2]}") | $(med "${peak[ngtcp2]}") |

quack / ngtcp2: **${ratio}×**"
echo "$table"
[ "$doc" = 1 ] || exit 0
cat >"$work/section" <<EOF
<!-- memory.sh begin: written by bench/memory.sh, do not edit by hand -->
## Memory per idle connection (\`bench/memory.sh\`)

A server's resident memory per established, idle HTTP/3 connection:
\`bench_conns\` opens $conns connections (handshake complete, the HTTP/3
control and QPACK streams set up, no request) over 100 client ports and holds
them ${hold} s; the server's VmRSS is sampled every 0.1 s and (peak − idle) /
$conns is the figure. Both servers run single-threaded with their defaults
(\`quack serve --root\`, \`gtlsserver -q -d\`), same run, alternating, $rounds
rounds each (median). Run: $(date -u '+%Y-%m-%d %H:%M UTC'), quack \`$head\`
(\`$build\`), load average $load0 at the start and $load1 at the end on
$(nproc) cores.

$table

What an idle quack connection holds (\`heaptrack\` on \`quack serve\` with 300
connections): \`qk_conn\` itself, the GnuTLS session, nghttp3's connection
and control-stream state, and recovery's packet and frame records. Freed or
shared since this script's first run (187 KiB per connection at 861f611,
1000 connections): the certificate, key and priority string are
loaded once per endpoint instead of per handshake (\`qk_tls_creds\`), drained
TLS output and the CRYPTO buffers of discarded packet-number spaces are
freed, a stream whose data is all acknowledged or read keeps no 4 KiB block,
and HTTP/3's 64 KiB read buffer moved to the stack (16 KiB).

Command: \`bash bench/memory.sh $build --conns $conns --rounds $rounds\`.
<!-- memory.sh end -->
EOF
replace_doc_section "$src/docs/perf.md" memory.sh "$work/section" append
echo "wrote $src/docs/perf.md" >&2
