#!/usr/bin/env bash
# ACK-frequency experiments (docs/experiments/ack-frequency.md).
# usage: bench/ackfreq.sh [BUILD_DIR] [OUT_DIR] [--no-loopback | --loopback-only | --bbr]
#   2-4: simulator scenarios bench/scenarios/ackfreq-{lossy,asym,reorder}.ini
#        run with ack_frequency = off (RFC 9000), a fixed threshold and auto,
#        every mode on the same seeds (paired: same loss pattern); tables give
#        the mean +- standard error of goodput and of the per-seed goodput
#        ratio to `off`. CSV + gnuplot PNGs in OUT_DIR.
#        SEEDS (default 10), LOSSY_S (120), REORDER_S (30), ASYM_S (10) set
#        seeds and simulated seconds. Exp. 3 also sweeps the 1 Mbit/s ACK
#        direction's queue (time- and packet-limited); that scenario has no
#        random element, so one seed.
#        LOSSY_MODES / ASYM_MODES / REORDER_MODES override the modes (the
#        first is the baseline), e.g. LOSSY_MODES="off 10 auto auto-threshold"
#   1:   loopback `quack perf` (no protection), threshold 1 vs 10 asked by the
#        client or by the server, and auto; table, ACK frames per data packet,
#        CPU s; OUT_DIR/ackfreq-loopback.{csv,png} (DURATION s per row, 5).
set -euo pipefail
build=${1:-build/release}
out=${2:-docs/experiments}
loopback=1
[[ ${3:-} == --no-loopback ]] && loopback=0
sims=1
[[ ${3:-} == --loopback-only ]] && sims=0
seeds=${SEEDS:-10}
here=$(cd "$(dirname "$0")" && pwd)
quack=$build/quack
[[ -x $quack ]] || { echo "ackfreq.sh: $quack missing; run 'make release' first" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() { # field NAME LINE -> value of NAME=... in the flow row
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2" | tr -d '%'
}

# sim_row INI MODE SEED DURATION [LINK_FORWARD_LIMIT] -> the flow's result row
sim_row() {
    local q=${5:-}
    awk -v q="$q" '/^\[/ { s = ($0 == "[link.forward]") }
                   { if (s && q != "" && $1 ~ /^limit/) print q; else print }' "$1" |
        sed -e "s/^ack_frequency = .*/ack_frequency = $2/" \
            -e "s/^duration = .*/duration = $4/" \
            -e "${SIM_CC:+s/^cc = .*/cc = $SIM_CC/}" >"$tmp/s.ini"
    "$quack" sim "$tmp/s.ini" --seed "$3" --quiet | grep '^bulk '
}

sim_exp() { # sim_exp NAME DURATION SEEDS MODES...
    local name=$1 dur=$2 nseeds=$3; shift 3
    local csv=$out/ackfreq-$name.csv
    echo "mode,seed,goodput_mbps,acks_per_pkt,acks_imm,spurious,retx,af_sent,imm_sent,srtt_ms" >"$csv"
    for seed in $(seq 1 "$nseeds"); do
        for mode in "$@"; do
            row=$(sim_row "$here/scenarios/ackfreq-$name.ini" "$mode" "$seed" "$dur")
            gp=$(awk '{print $5}' <<<"$row" | sed 's/M$//')
            # The mode label must not contain the CSV separator ("10,25000,1").
            echo "${mode//,//},$seed,$gp,$(field acks_per_pkt "$row"),$(field acks_imm "$row"),$(field spurious "$row"),$(field retx "$row"),$(field af_sent "$row"),$(field imm_sent "$row"),$(field srtt_ms "$row")" >>"$csv"
        done
    done
    # Per mode: mean +- stderr of goodput and of the per-seed ratio to the
    # first mode (off), plus means of the counters.
    awk -F, 'NR > 1 { m = $1; if (!(m in o)) o[m] = ++k; if (o[m] == 1) base[$2] = $3;
                      n[m]++; g[m] += $3; gg[m] += $3 * $3; a[m] += $4; i[m] += $5; s[m] += $6; r[m] += $7;
                      gp[m, $2] = $3 }
             function se(sum, sq, cnt,   mu) { if (cnt < 2) return 0; mu = sum / cnt;
                      return sqrt((sq - cnt * mu * mu) / (cnt - 1) / cnt) }
             END { for (m in o) ord[o[m]] = m;
                   printf "| mode | goodput Mbit/s | goodput / off (paired) | ACKs per data packet | immediate ACKs | spurious retx | retx |\n|---|---|---|---|---|---|---|\n";
                   for (j = 1; j <= k; j++) { m = ord[j]; rs = 0; rr = 0; c = 0;
                     for (key in gp) { split(key, kk, SUBSEP); if (kk[1] != m || base[kk[2]] == 0) continue;
                                       x = gp[key] / base[kk[2]]; rs += x; rr += x * x; c++ }
                     printf "| %s | %.2f ± %.2f | %.4f ± %.4f | %.4f | %.0f | %.1f | %.1f |\n", m, g[m]/n[m], se(g[m], gg[m], n[m]),
                            rs / c, se(rs, rr, c), a[m]/n[m], i[m]/n[m], s[m]/n[m], r[m]/n[m] } }' \
        "$csv" | tee "$tmp/$name.md"
    awk -F, 'NR > 1 { n[$1]++; g[$1] += $3; a[$1] += $4; if (!($1 in o)) o[$1] = ++k }
             END { for (m in o) ord[o[m]] = m;
                   for (j = 1; j <= k; j++) { m = ord[j]; printf "%s %f %f\n", m, g[m]/n[m], a[m]/n[m] } }' \
        "$csv" >"$tmp/$name.dat"
    gnuplot -e "dat='$tmp/$name.dat'; png='$out/ackfreq-$name.png'; title='$name (mean of $nseeds seeds x $dur)'" \
        "$here/plot/ackfreq.gp"
}

# Exp. 3: the ACK direction's queue. Linux txqueuelen is 1000 packets; DSL and
# cable modems buffer hundreds of ms to seconds; short queues for contrast.
asym_sweep() {
    local csv=$out/ackfreq-asym-sweep.csv dur=${ASYM_S:-10}s
    echo "queue,off_mbps,off_srtt_ms,fixed10_mbps,auto_mbps,auto_srtt_ms,auto_over_off" >"$csv"
    echo "| ACK-direction queue | off Mbit/s (srtt ms) | 10 Mbit/s | auto Mbit/s (srtt ms) | auto / off |"
    echo "|---|---|---|---|---|"
    local i=0
    for q in "limit_time = 25ms" "limit_time = 50ms" "limit_time = 100ms" "limit_time = 250ms" \
        "limit_time = 1s" "limit_pkts = 50" "limit_pkts = 100" "limit_pkts = 300" "limit_pkts = 1000"; do
        local r_off r_10 r_auto g_off g_10 g_auto
        r_off=$(sim_row "$here/scenarios/ackfreq-asym.ini" off 1 "$dur" "$q")
        r_10=$(sim_row "$here/scenarios/ackfreq-asym.ini" 10 1 "$dur" "$q")
        r_auto=$(sim_row "$here/scenarios/ackfreq-asym.ini" auto 1 "$dur" "$q")
        g_off=$(awk '{sub("M$", "", $5); print $5}' <<<"$r_off")
        g_10=$(awk '{sub("M$", "", $5); print $5}' <<<"$r_10")
        g_auto=$(awk '{sub("M$", "", $5); print $5}' <<<"$r_auto")
        local label=${q#limit_time = }
        label=${label/limit_pkts = /}
        [[ $q == limit_pkts* ]] && label="$label pkts"
        echo "$label,$g_off,$(field srtt_ms "$r_off"),$g_10,$g_auto,$(field srtt_ms "$r_auto"),$(awk -v a="$g_auto" -v b="$g_off" 'BEGIN{printf "%.2f", a / b}')" >>"$csv"
        echo "| $label | $g_off ($(field srtt_ms "$r_off")) | $g_10 | $g_auto ($(field srtt_ms "$r_auto")) | $(awk -v a="$g_auto" -v b="$g_off" 'BEGIN{printf "%.2f", a / b}') |"
        i=$((i + 1))
    done
    gnuplot -e "csv='$csv'; png='$out/ackfreq-asym-sweep.png'; title='exp. 3: goodput vs ACK-direction queue ($dur)'" "$here/plot/ackfreq-asym-sweep.gp"
}

# --bbr (issue 18): exp. 2 and 4 again with each scenario's controller and
# with BBR (cc = bbr), same seeds and modes, short runs (SEEDS default 3,
# LOSSY_S / REORDER_S default 10 s); CSVs ackfreq-bbr-{lossy,reorder}.csv;
# the section between the "ackfreq.sh bbr" markers of
# docs/experiments/ack-frequency.md (OUT_DIR/ack-frequency.md) is rewritten.
bbr_exp() { # bbr_exp NAME DURATION SEEDS MODES... -> markdown table
    local name=$1 dur=$2 nseeds=$3; shift 3
    local csv=$out/ackfreq-bbr-$name.csv ini=$here/scenarios/ackfreq-$name.ini
    local base; base=$(sed -n 's/^cc = //p' "$ini")
    echo "cc,mode,seed,goodput_mbps,acks_per_pkt,acks_imm,spurious,retx,af_sent,imm_sent,srtt_ms" >"$csv"
    for seed in $(seq 1 "$nseeds"); do
        for cc in "$base" bbr; do
            for mode in "$@"; do
                row=$(SIM_CC=$cc sim_row "$ini" "$mode" "$seed" "$dur")
                gp=$(awk '{print $5}' <<<"$row" | sed 's/M$//')
                echo "$cc,${mode//,//},$seed,$gp,$(field acks_per_pkt "$row"),$(field acks_imm "$row"),$(field spurious "$row"),$(field retx "$row"),$(field af_sent "$row"),$(field imm_sent "$row"),$(field srtt_ms "$row")" >>"$csv"
            done
        done
    done
    # per cc and mode: mean +- stderr of goodput, mean per-seed ratio to the
    # same cc's first mode (off), means of the counters
    awk -F, 'NR > 1 { k = $1 SUBSEP $2; if (!(k in o)) { o[k] = ++n; ord[n] = k }
                      if (!($1 in first)) first[$1] = $2
                      if ($2 == first[$1]) base[$1, $3] = $4
                      c[k]++; g[k] += $4; gg[k] += $4 * $4; a[k] += $5; im[k] += $6; sp[k] += $7; r[k] += $8
                      isent[k] += $10; srtt[k] += $11; gp[k, $3] = $4 }
             function se(sum, sq, cnt,   mu) { if (cnt < 2) return 0; mu = sum / cnt
                      return sqrt((sq - cnt * mu * mu) / (cnt - 1) / cnt) }
             END { printf "| cc | mode | goodput Mbit/s | goodput / off (same cc, paired) | ACKs per data packet | immediate ACKs | IMMEDIATE_ACK frames sent | spurious retx | retx | srtt ms |\n|---|---|---|---|---|---|---|---|---|---|\n"
                   for (j = 1; j <= n; j++) { k = ord[j]; split(k, kk, SUBSEP); rs = rr = m = 0
                     for (q in gp) { split(q, qq, SUBSEP); if (qq[1] SUBSEP qq[2] != k || base[kk[1], qq[3]] == 0) continue
                                     x = gp[q] / base[kk[1], qq[3]]; rs += x; rr += x * x; m++ }
                     printf "| %s | %s | %.2f ± %.2f | %.4f ± %.4f | %.4f | %.0f | %.0f | %.1f | %.1f | %.1f |\n", kk[1], kk[2],
                            g[k] / c[k], se(g[k], gg[k], c[k]), rs / m, se(rs, rr, m), a[k] / c[k], im[k] / c[k],
                            isent[k] / c[k], sp[k] / c[k], r[k] / c[k], srtt[k] / c[k] } }' "$csv"
}
bbr_section() {
    local nseeds=${SEEDS:-3} ls=${LOSSY_S:-10}s rs=${REORDER_S:-10}s t0 head
    t0=$(date +%s)
    head=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    # shellcheck disable=SC2086
    bbr_exp lossy "$ls" "$nseeds" ${LOSSY_MODES:-off 10 auto} >"$tmp/bbr-lossy.md"
    # shellcheck disable=SC2086
    bbr_exp reorder "$rs" "$nseeds" ${REORDER_MODES:-off 10,25000,1 auto} >"$tmp/bbr-reorder.md"
    {
        echo "<!-- ackfreq.sh bbr begin: written by bench/ackfreq.sh --bbr, do not edit by hand -->"
        echo "## Exp. 2 and 4 with BBR (issue 18)"
        echo
        echo "BBR (draft-ietf-ccwg-bbr, docs/cc.md) sets its rate from delivery-rate"
        echo "samples (draft §4.1): each ACK yields delivered / max(send interval, ACK"
        echo "interval). A thinned ACK stream gives fewer, larger samples, and an ACK"
        echo "delayed by the receiver stretches the ACK interval; the experiments below"
        echo "rerun exp. 2 and 4 with each scenario's own controller and with \`cc = bbr\`,"
        echo "same modes, same seeds 1..$nseeds (paired), short runs: $ls (exp. 2) and $rs"
        echo "(exp. 4) of simulated time, so Startup weighs more than in the long runs"
        echo "above. \"goodput / off\" is the per-seed ratio to the same controller's RFC"
        echo "9000 run. Written by \`SEEDS=$nseeds LOSSY_S=$ls REORDER_S=$rs bench/ackfreq.sh"
        echo "$build $out --bbr\` at \`$head\` ($(date -u +%Y-%m-%d), $(($(date +%s) - t0)) s on this machine)."
        echo "CSVs: ackfreq-bbr-lossy.csv, ackfreq-bbr-reorder.csv."
        echo
        echo "### Exp. 2 (1 Gbit/s, 40 ms RTT, 0.1 % loss)"
        echo
        cat "$tmp/bbr-lossy.md"
        echo
        echo "### Exp. 4 (5 % reordering)"
        echo
        cat "$tmp/bbr-reorder.md"
        echo
        awk -F'|' 'function t(x) { gsub(/^ +| +$/, "", x); return x }
                   NR > 2 && $2 ~ /bbr/ { m = t($3); r[m] = t($5); a[m] = t($6); i[m] = t($8) }
                   END { for (m in r) if (m != "off") printf "BBR with `%s`: goodput / off %s, %s ACKs per data packet, %s IMMEDIATE_ACK frames sent (exp. 2).\n", m, r[m], a[m], i[m] }' \
            "$tmp/bbr-lossy.md" | sort
        awk -F'|' 'function t(x) { gsub(/^ +| +$/, "", x); return x }
                   NR > 2 && $2 ~ /bbr/ { m = t($3); r[m] = t($5); a[m] = t($6); s[m] = t($9) }
                   END { for (m in r) if (m != "off") printf "BBR with `%s`: goodput / off %s, %s ACKs per data packet, %s spurious retransmissions (exp. 4).\n", m, r[m], a[m], s[m] }' \
            "$tmp/bbr-reorder.md" | sort
        echo "<!-- ackfreq.sh bbr end -->"
    } >"$tmp/bbr-section.md"
    python3 - "$out/ack-frequency.md" "$tmp/bbr-section.md" <<'PY'
import re, sys
path, sec = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
text = open(path).read()
pat = re.compile(r"<!-- ackfreq.sh bbr begin.*?<!-- ackfreq.sh bbr end -->", re.S)
text = pat.sub(lambda m: sec, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + sec + "\n"
open(path, "w").write(text)
PY
    cat "$tmp/bbr-section.md"
}
if [[ ${3:-} == --bbr ]]; then
    bbr_section
    exit 0
fi

if [[ $sims == 1 ]]; then
echo "## 2: 1 Gbit/s, 40 ms RTT, 0.1% loss"
# shellcheck disable=SC2086
sim_exp lossy "${LOSSY_S:-120}s" "$seeds" ${LOSSY_MODES:-off 10 auto}
echo "## 3: 100 Mbit/s down, 1 Mbit/s up, 30 ms RTT"
# shellcheck disable=SC2086
sim_exp asym "${ASYM_S:-10}s" 1 ${ASYM_MODES:-off 10 auto}
asym_sweep
echo "## 4: 5% reordering"
# shellcheck disable=SC2086
sim_exp reorder "${REORDER_S:-30}s" "$seeds" ${REORDER_MODES:-off 10,25000,1 auto}

fi

[[ $loopback == 1 ]] || exit 0
echo "## 1: loopback quack perf (no protection)"
port=$((20000 + RANDOM % 20000))
lb=$tmp/loopback.md
: >"$lb"
lcsv=$out/ackfreq-loopback.csv
echo "config,down_mbps,up_mbps,client_acks_per_pkt_sent,client_acks_per_pkt_received,client_cpu_s" >"$lcsv"
perf_run() { # perf_run LABEL SERVER_AF CLIENT_AF SHORT_LABEL
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
    # One CSV row: throughput from the "transferred:" line, client ACK rates.
    awk -v cpu="$cpu_c" -v lab="$4" '/^transferred:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^down/) d = $(i-1); if ($(i+1) ~ /^up/) u = $(i-1) } }
             /^stats: pkts sent/ {ps=$4; pr=$6} /^stats: ack frames sent/ {as=$5; ar=$7}
             END { printf "%s,%s,%s,%.4f,%.4f,%s\n", lab, d, u, pr ? as/pr : 0, ps ? ar/ps : 0, cpu }' \
        "$tmp/cli.out" >>"$lcsv"
}
perf_run "ACK frequency off on both sides (RFC 9000, threshold 1)" off off off
perf_run "threshold 1 asked by both sides" 1,25000 1,25000 1/both
perf_run "threshold 10 asked by the client" off 10,25000 10/client
perf_run "threshold 10 asked by the server" 10,25000 off 10/server
perf_run "auto on both sides (the default)" auto auto auto
# Download throughput and the client's ACK frames per packet received.
awk -F, 'NR > 1 { print $1, $2, $4 }' "$lcsv" >"$tmp/loopback.dat"
gnuplot -e "dat='$tmp/loopback.dat'; png='$out/ackfreq-loopback.png'; title='loopback quack perf, ${DURATION:-5} s per row (download Mbit/s; client ACK frames per packet received)'" \
    "$here/plot/ackfreq.gp"
