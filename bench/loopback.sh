#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# quack vs ngtcp2 (Debian's gtlsserver/gtlsclient, GnuTLS, AES-128-GCM by
# default on both) downloading the same number of bytes over loopback,
# alternating, N runs each. Prints median goodput, CPU seconds per GiB for
# client and server, and the ratio quack/ngtcp2.
#
# usage: bench/loopback.sh [BUILD_DIR] [--size N] [--runs N] [--no-protection]
#   BUILD_DIR        a Release build (default build/release)
#   --size N         bytes per download (default 1G; K/M/G suffixes)
#   --runs N         runs per implementation (default 5)
#   --no-protection  also run quack with null packet protection (crypto share)
#   --max-udp-payload N  largest UDP payload quack may send (quack perf
#                    --max-udp-payload on both sides; DPLPMTUD finds it from
#                    1200); default 1452. ngtcp2 keeps its default: with
#                    --max-udp-payload-size=16384 on gtlsserver/gtlsclient,
#                    0.12 needed 90 s for 256 MiB (docs/perf.md)
set -euo pipefail
build=build/release
size=1G
runs=5
noprot=0
mtu=
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --no-protection) noprot=1; shift ;;
    --max-udp-payload) mtu=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "loopback.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
bytes=$(numfmt --from=iec "${size%B}")
q="$build/quack"
for tool in "$q" gtlsserver gtlsclient openssl; do
    command -v "$tool" >/dev/null || { echo "loopback.sh: $tool not found" >&2; exit 1; }
done
tck=$(getconf CLK_TCK)
tmp=$(mktemp -d)
spid=
cleanup() {
    if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then kill "$spid"; wait "$spid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/htdocs"
truncate -s "$bytes" "$tmp/htdocs/file"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/key.pem" \
    -out "$tmp/cert.pem" -days 30 -subj /CN=localhost 2>/dev/null

proc_cpu() { # PID -> CPU seconds (user + system) so far
    awk -v t="$tck" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"
}
wait_port() { # PID FILE PATTERN
    for _ in $(seq 200); do
        grep -q "$3" "$2" 2>/dev/null && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
free_port() { python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# One run: prints "wall_s client_cpu_s server_cpu_s".
run_one() { # IMPL
    local impl=$1 port t0 t1 s0 s1 ccpu
    case $impl in
    quack | quack-noprot)
        local np=()
        [ "$impl" = quack-noprot ] && np=(--no-protection)
        [ -n "$mtu" ] && np+=(--max-udp-payload "$mtu")
        # Emptied here, not by the redirection below: that happens in the child,
        # and the wait could still read the previous server's "listening on".
        : >"$tmp/s.out"
        "$q" perf server --listen 127.0.0.1:0 --quiet "${np[@]}" >"$tmp/s.out" 2>"$tmp/s.err" &
        spid=$!
        wait_port "$spid" "$tmp/s.out" '^listening on' || { cat "$tmp/s.err" >&2; return 1; }
        local addr pin
        addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$tmp/s.out")
        pin=$(sed -n 's/^pin: //p' "$tmp/s.out")
        s0=$(proc_cpu "$spid")
        t0=$(date +%s.%N)
        /usr/bin/time -f "%U %S" -o "$tmp/time" "$q" perf client --connect "$addr" --pin "$pin" \
            --quiet "${np[@]}" --download-size "$bytes" --upload-size 0 >"$tmp/c.out" 2>"$tmp/c.err" ||
            { cat "$tmp/c.err" >&2; return 1; }
        t1=$(date +%s.%N)
        grep -q "download $bytes bytes ($bytes verified)" "$tmp/c.out" ||
            { echo "quack: not every byte arrived" >&2; cat "$tmp/c.out" >&2; return 1; }
        ;;
    ngtcp2)
        port=$(free_port)
        gtlsserver -q 127.0.0.1 "$port" "$tmp/key.pem" "$tmp/cert.pem" -d "$tmp/htdocs" \
            >"$tmp/s.out" 2>&1 &
        spid=$!
        sleep 0.3
        s0=$(proc_cpu "$spid")
        t0=$(date +%s.%N)
        /usr/bin/time -f "%U %S" -o "$tmp/time" gtlsclient -q --no-quic-dump --no-http-dump \
            --exit-on-all-streams-close 127.0.0.1 "$port" "https://127.0.0.1:$port/file" \
            >"$tmp/c.out" 2>&1 || { cat "$tmp/c.out" >&2; return 1; }
        t1=$(date +%s.%N)
        ;;
    esac
    s1=$(proc_cpu "$spid")
    kill "$spid"
    wait "$spid" 2>/dev/null || true
    spid=
    ccpu=$(awk '{printf "%.3f", $1 + $2}' "$tmp/time")
    awk -v a="$t0" -v b="$t1" -v c="$ccpu" -v x="$s0" -v y="$s1" \
        'BEGIN {printf "%.4f %s %.3f\n", b - a, c, y - x}'
}

impls=(quack ngtcp2)
[ "$noprot" = 1 ] && impls=(quack ngtcp2 quack-noprot)
echo "loopback download of $bytes bytes, $runs runs each, alternating (${impls[*]})${mtu:+, quack max UDP payload $mtu}"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$(dirname "$0")" diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
udp_rcvbuf_errors() { awk '/^Udp:/ {n++; if (n == 1) for (i = 1; i <= NF; i++) if ($i == "RcvbufErrors") c = i; if (n == 2) print $c}' /proc/net/snmp; }
rcverr0=$(udp_rcvbuf_errors)
for i in $(seq "$runs"); do
    for impl in "${impls[@]}"; do
        r=$(run_one "$impl")
        echo "$r" >>"$tmp/$impl.runs"
        awk -v i="$i" -v n="$impl" -v b="$bytes" '{printf "run %d %-12s %7.3f s  %6.2f Gbit/s  cpu client %.2f s server %.2f s\n", i, n, $1, b * 8 / $1 / 1e9, $2, $3}' <<<"$r"
    done
done

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
printf "%-13s %14s %18s %14s %14s %14s\n" impl "goodput Gbit/s" "(min..max)" "client CPU s/GiB" "server CPU s/GiB" "total s/GiB"
declare -A med_gbps med_cpu
for impl in "${impls[@]}"; do
    f="$tmp/$impl.runs"
    g=$(awk -v b="$bytes" '{print b * 8 / $1 / 1e9}' "$f" | median)
    lo=$(awk -v b="$bytes" '{print b * 8 / $1 / 1e9}' "$f" | sort -g | head -1)
    hi=$(awk -v b="$bytes" '{print b * 8 / $1 / 1e9}' "$f" | sort -g | tail -1)
    cc=$(awk -v b="$bytes" '{print $2 * 1073741824 / b}' "$f" | median)
    sc=$(awk -v b="$bytes" '{print $3 * 1073741824 / b}' "$f" | median)
    tc=$(awk -v b="$bytes" '{print ($2 + $3) * 1073741824 / b}' "$f" | median)
    med_gbps[$impl]=$g
    med_cpu[$impl]=$tc
    printf "%-13s %14.2f %18s %16.2f %16.2f %14.2f\n" "$impl" "$g" "($(printf '%.2f..%.2f' "$lo" "$hi"))" "$cc" "$sc" "$tc"
done
echo
awk -v a="${med_gbps[quack]}" -v b="${med_gbps[ngtcp2]}" -v c="${med_cpu[quack]}" -v d="${med_cpu[ngtcp2]}" \
    'BEGIN {printf "ratio quack/ngtcp2: goodput %.2fx, CPU per GiB %.2fx\n", a / b, c / d}'
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg); UDP receive-buffer drops during the runs (all processes): $(($(udp_rcvbuf_errors) - rcverr0))"
if [ "$noprot" = 1 ]; then
    awk -v a="${med_cpu[quack]}" -v b="${med_cpu[quack-noprot]}" \
        'BEGIN {printf "crypto share of quack CPU (1 - noprot/protected): %.0f%%\n", (1 - b / a) * 100}'
fi
