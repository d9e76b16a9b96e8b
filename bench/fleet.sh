#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A quack fleet behind nginx's stream UDP balancer (docs/deploy.md), with 1,
# 2 and 3 servers: the topology of tests/cli/fleet.sh (network namespaces, a
# bridge, nginx hashing the client 4-tuple on 10.38.0.1:4433, each server on
# its own address with --preferred-addr, --lb-config and --fleet-keys).
# For each server count:
#   handshakes  bench_conns opens CONNS connections through the balancer
#               (64 handshakes in flight, SOCKETS client ports): handshakes/s
#               of wall time, and per CPU second of the servers (user + system
#               time of the quack serve processes, /proc/PID/stat) and of
#               servers + nginx;
#   goodput     GETS concurrent `quack get` of one 10 MB file each (they move
#               to their server's preferred address): aggregate goodput
#               (Mbit/s of wall time), and MB per server CPU second; every
#               file checked byte-exact (SHA-256).
# This machine has 2 cores shared with other jobs: compare rows of one run
# (the ratio columns), not runs. Writes the table into docs/perf.md between the
# "fleet.sh" markers unless --no-doc.
# Needs root, ip netns, nginx with the stream module, and BUILD/bench_conns.
# usage: bench/fleet.sh [BUILD_DIR (build/release)] [--conns N (600)] [--gets N (6)] [--no-doc]
set -uo pipefail
build=build/release
conns=600
gets=6
doc=1
while [ $# -gt 0 ]; do
    case $1 in
    --conns) conns=$2; shift ;;
    --gets) gets=$2; shift ;;
    --no-doc) doc=0 ;;
    -*) echo "fleet.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
q=$build/quack
mod=/usr/lib/nginx/modules/ngx_stream_module.so
[ "$(id -u)" -eq 0 ] || { echo "fleet.sh: needs root (network namespaces)" >&2; exit 1; }
[ -x "$build/bench_conns" ] || { echo "fleet.sh: build bench_conns first (cmake --build $build --target bench_conns)" >&2; exit 1; }
command -v nginx >/dev/null && [ -e $mod ] ||
    { echo "fleet.sh: nginx with the stream module is needed (scripts/deps.sh)" >&2; exit 1; }
tag="qb$$"
tmp=$(mktemp -d)
. "$src/bench/lib/fleet_rig.bash" # fleet_net, fleet_serve, fleet_nginx, fleet_cleanup, cpu_ticks
trap fleet_cleanup EXIT
fleet_net || exit 1
"$q" keygen --out "$tmp/id" >"$tmp/keygen.out" || exit 1
pin=$(sed -n 's/^pin: //p' "$tmp/keygen.out")
mkdir -p "$tmp/www"
head -c 10485760 /dev/urandom >"$tmp/www/f.bin"
want=$(sha256sum <"$tmp/www/f.bin" | cut -d' ' -f1)
hz=$(getconf CLK_TCK)

rows=()
for n in 1 2 3; do
    fleet_serve "$n" || exit 1
    fleet_nginx "$n" || exit 1
    c0=$(cpu_ticks "${servers[@]}")
    g0=$(cpu_ticks "$(cat "$tmp/ngx/nginx.pid")" $(pgrep -P "$(cat "$tmp/ngx/nginx.pid")"))
    out=$(ip netns exec "$tag-c" "$build/bench_conns" 10.38.0.1:4433 "$conns" 60 0 120)
    c1=$(cpu_ticks "${servers[@]}")
    g1=$(cpu_ticks "$(cat "$tmp/ngx/nginx.pid")" $(pgrep -P "$(cat "$tmp/ngx/nginx.pid")"))
    read -r ok secs <<<"$(echo "$out" | sed -n 's/^conns: connected \([0-9]*\) of [0-9]* in \([0-9.]*\) s.*/\1 \2/p')"
    [ "${ok:-0}" -eq "$conns" ] || { echo "fleet.sh: $n servers: $out" >&2; exit 1; }
    hs=$(echo "$ok / $secs" | bc -l)
    scpu=$(echo "($c1 - $c0) / $hz" | bc -l)
    gcpu=$(echo "($g1 - $g0) / $hz" | bc -l)
    # goodput: GETS clients at once, each one 10 MB file
    c0=$(cpu_ticks "${servers[@]}")
    t0=$(date +%s.%N)
    pids=()
    for k in $(seq "$gets"); do
        mkdir -p "$tmp/g$k"
        ip netns exec "$tag-c" timeout 120 "$q" get --quiet --pin "$pin" --output "$tmp/g$k" \
            https://10.38.0.1:4433/f.bin 2>"$tmp/g$k.err" &
        pids+=($!)
    done
    wait "${pids[@]}"
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "${servers[@]}")
    for k in $(seq "$gets"); do
        [ "$(sha256sum <"$tmp/g$k/f.bin" | cut -d' ' -f1)" = "$want" ] ||
            { echo "fleet.sh: $n servers: download $k not byte-exact: $(cat "$tmp/g$k.err")" >&2; exit 1; }
        rm -f "$tmp/g$k/f.bin"
    done
    gput=$(echo "$gets * 10485760 * 8 / ($t1 - $t0) / 1000000" | bc -l)
    gcpu2=$(echo "($c1 - $c0) / $hz" | bc -l)
    rows+=("$(printf '%d|%.0f|%.0f|%.0f|%.0f|%.1f' "$n" "$hs" \
        "$(echo "$ok / $scpu" | bc -l)" "$(echo "$ok / ($scpu + $gcpu)" | bc -l)" "$gput" \
        "$(echo "$gets * 10 / $gcpu2" | bc -l)")")
    echo "fleet.sh: $n server(s): ${rows[-1]}" >&2
    fleet_stop
done

base_hs=$(echo "${rows[0]}" | cut -d'|' -f2)
base_gp=$(echo "${rows[0]}" | cut -d'|' -f5)
load=$(cut -d' ' -f1 /proc/loadavg)
table=$(
    echo "Written by \`bench/fleet.sh\` ($(date -u +%Y-%m-%d), $(git -C "$src" rev-parse --short HEAD),"
    echo "release build): $conns handshakes through nginx's stream module (UDP, hash of"
    echo "the client address and port) by \`bench_conns\`, then $gets concurrent \`quack get\` of"
    echo "10 MB (byte-exact), for 1, 2 and 3 \`quack serve\` in their own network namespaces"
    echo "(docs/deploy.md). Machine: $(nproc) cores shared with other jobs (load average"
    echo "$load at the end): compare the rows of one run, and the per-CPU-second columns"
    echo "more than the wall-clock ones."
    echo
    echo "| servers | handshakes/s | vs 1 | handshakes per server CPU s | per CPU s incl. nginx | goodput (Mbit/s) | vs 1 | MB per server CPU s |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    for r in "${rows[@]}"; do
        IFS='|' read -r n hs hcpu hall gp mbcpu <<<"$r"
        printf '| %s | %s | %.2fx | %s | %s | %s | %.2fx | %s |\n' "$n" "$hs" \
            "$(echo "$hs / $base_hs" | bc -l)" "$hcpu" "$hall" "$gp" \
            "$(echo "$gp / $base_gp" | bc -l)" "$mbcpu"
    done
)
echo "$table"
if [ "$doc" = 1 ]; then
    python3 - "$src/docs/perf.md" "$table" <<'EOF'
import sys
path, table = sys.argv[1], sys.argv[2]
begin = "<!-- fleet.sh begin: written by bench/fleet.sh, do not edit by hand -->"
end = "<!-- fleet.sh end -->"
text = open(path, encoding="utf-8").read()
block = begin + "\n" + table + "\n" + end
if begin in text:
    a = text.index(begin)
    b = text.index(end, a) + len(end)
    text = text[:a] + block + text[b:]
else:
    text = text.rstrip("\n") + "\n\n## A fleet behind a UDP load balancer (`bench/fleet.sh`)\n\n" + block + "\n"
open(path, "w", encoding="utf-8").write(text)
EOF
fi
