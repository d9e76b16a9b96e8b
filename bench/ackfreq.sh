#!/usr/bin/env bash
# ACK-frequency experiments (docs/experiments/ack-frequency.md).
# usage: bench/ackfreq.sh [BUILD_DIR] [OUT_DIR] [--no-loopback]
#   2-4: simulator scenarios bench/scenarios/ackfreq-{lossy,asym,reorder}.ini
#        run with ack_frequency = off (RFC 9000), 10 (fixed) and auto over
#        SEEDS seeds (default 5); CSV + gnuplot PNGs in OUT_DIR.
#   1:   loopback `quack perf` (no protection), threshold 1 vs 10 asked by the
#        client or by the server; table, ACK frames per data packet, CPU s.
set -euo pipefail
build=${1:-build/release}
out=${2:-docs/experiments}
loopback=1
[[ ${3:-} == --no-loopback ]] && loopback=0
seeds=${SEEDS:-5}
here=$(cd "$(dirname "$0")" && pwd)
quack=$build/quack
[[ -x $quack ]] || { echo "ackfreq.sh: $quack missing; run 'make release' first" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() { # field NAME LINE -> value of NAME=... in the flow row
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2" | tr -d '%'
}

sim_exp() { # sim_exp NAME MODES...
    local name=$1; shift
    local csv=$out/ackfreq-$name.csv
    echo "mode,seed,goodput_mbps,acks_per_pkt,acks_imm,spurious,retx,af_sent,imm_sent,srtt_ms" >"$csv"
    for mode in "$@"; do
        for seed in $(seq 1 "$seeds"); do
            sed "s/^ack_frequency = .*/ack_frequency = $mode/" \
                "$here/scenarios/ackfreq-$name.ini" >"$tmp/s.ini"
            row=$("$quack" sim "$tmp/s.ini" --seed "$seed" --quiet | grep '^bulk ')
            gp=$(awk '{print $5}' <<<"$row" | sed 's/M$//')
            echo "$mode,$seed,$gp,$(field acks_per_pkt "$row"),$(field acks_imm "$row"),$(field spurious "$row"),$(field retx "$row"),$(field af_sent "$row"),$(field imm_sent "$row"),$(field srtt_ms "$row")" >>"$csv"
        done
    done
    # Mean per mode.
    awk -F, 'NR > 1 { n[$1]++; g[$1] += $3; a[$1] += $4; i[$1] += $5; s[$1] += $6; r[$1] += $7;
                      if (!($1 in o)) o[$1] = ++k }
             END { for (m in o) ord[o[m]] = m;
                   printf "| mode | goodput Mbit/s | ACKs per data packet | immediate ACKs | spurious retx | retx |\n|---|---|---|---|---|---|\n";
                   for (j = 1; j <= k; j++) { m = ord[j];
                     printf "| %s | %.2f | %.4f | %.0f | %.1f | %.1f |\n", m, g[m]/n[m], a[m]/n[m], i[m]/n[m], s[m]/n[m], r[m]/n[m] } }' \
        "$csv" | tee "$tmp/$name.md"
    awk -F, 'NR > 1 { n[$1]++; g[$1] += $3; a[$1] += $4; if (!($1 in o)) o[$1] = ++k }
             END { for (m in o) ord[o[m]] = m;
                   for (j = 1; j <= k; j++) { m = ord[j]; printf "%s %f %f\n", m, g[m]/n[m], a[m]/n[m] } }' \
        "$csv" >"$tmp/$name.dat"
    gnuplot -e "dat='$tmp/$name.dat'; png='$out/ackfreq-$name.png'; title='$name (mean of $seeds seeds)'" \
        "$here/plot/ackfreq.gp"
}

echo "## 2: 1 Gbit/s, 40 ms RTT, 0.1% loss"
sim_exp lossy off 10 auto
echo "## 3: 100 Mbit/s down, 1 Mbit/s up, 30 ms RTT"
sim_exp asym off 10 auto
echo "## 4: 5% reordering"
sim_exp reorder off 10,25000,1 auto

[[ $loopback == 1 ]] || exit 0
echo "## 1: loopback quack perf (no protection)"
port=$((20000 + RANDOM % 20000))
lb=$tmp/loopback.md
: >"$lb"
perf_run() { # perf_run LABEL SERVER_AF CLIENT_AF
    "$quack" perf server --listen 127.0.0.1:$port --no-protection --ack-frequency "$2" --stats \
        --quiet 2>"$tmp/srv.err" &
    local spid=$!
    sleep 0.5
    /usr/bin/time -f "%U %S" -o "$tmp/cli.time" "$quack" perf client --connect 127.0.0.1:$port \
        --insecure --no-protection --duration "${DURATION:-5}" --ack-frequency "$3" --stats --quiet \
        >"$tmp/cli.out" 2>"$tmp/cli.err" || true
    sleep 0.5
    kill -INT $spid 2>/dev/null || true
    wait $spid 2>/dev/null || true
    local cpu_c; cpu_c=$(awk '{printf "%.2f", $1 + $2}' "$tmp/cli.time")
    {
        echo "### $1"
        echo
        echo '```'
        grep -v '^stats' "$tmp/cli.out"
        echo '```'
        # client stats: pkts received/sent, ack frames sent/received
        awk -v cpu="$cpu_c" '/^stats: pkts sent/ {ps=$4; pr=$6} /^stats: ack frames sent/ {as=$5; ar=$7}
             END { printf "client: ACK frames sent %s for %s packets received (%.3f per packet); ACK frames received %s for %s packets sent (%.3f); client CPU %s s\n\n", as, pr, pr ? as/pr : 0, ar, ps, ps ? ar/ps : 0, cpu }' "$tmp/cli.out"
    } | tee -a "$lb"
}
perf_run "ACK frequency off on both sides (RFC 9000, threshold 1)" off off
perf_run "threshold 1 asked by both sides" 1,25000 1,25000
perf_run "threshold 10 asked by the client" off 10,25000
perf_run "threshold 10 asked by the server" 10,25000 off
perf_run "auto on both sides (the default)" auto auto
