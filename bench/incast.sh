#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The incast experiment of shared/seeds/003 (docs/experiments/incast.md).
# usage: bench/incast.sh [BUILD_DIR] [OUT_DIR]
#   Runs bench/scenarios/incast.ini (1 Gbit/s, K = 20) and its 10 Gbit/s
#   variant (K = 65, 25 Gbit/s access links) once per row:
#     cubic        CUBIC, no ECN (Not-ECT: the step AQM cannot mark, the
#                  100-packet buffer drops)
#     dctcp        DCTCP (RFC 8257), ECT(0), step marking at K
#     dctcp-bug    DCTCP with the scenario key ecn_ack_bug (the seed's receiver bug)
#     prague       Prague (ECT(1)) over DualPI2 whose L queue steps at K
#                  (dualpi2_l_thresh = K's drain time, range 0)
#   ACK frequency is off on every row (RFC 9000 ACK rules), see incast.ini.
#   Each run stops once the two senders' 1 MB connections have completed
#   RPCS (10000) RPCs between them ([sim] stop_rpcs), or at DURATION_1G /
#   DURATION_10G (caps, 900s / 60s of simulated time), whichever is first.
#   RPC latencies (both senders merged) give p50/p99/p99.9; the bottleneck's
#   queue occupancy comes from its 1 ms samples (mean and p99, packets).
#   At 10 Gbit/s also dctcp-k20: DCTCP with K = 20 packets (not the issue's 65).
#   Then shorter diagnostic runs at 1 Gbit/s (until DIAG_RPCS (2000) 1 MB
#   RPCs) for the sharing among the window-limited DCTCP flows: as it is
#   (dctcp, paced in bursts of 2 datagrams), with the 10-datagram burst
#   allowance (dctcp-burst10), with seeded per-packet jitter of 10 us on the
#   access links (dctcp-jitter-s1..s3, dctcp-burst10-jitter-s1). make_ini
#   also knows dctcp-hosts, cubic-jitter-sN and dctcp-af (earlier reports).
#   DIAG=0 skips them.
#   The runs go JOBS (2) at a time. SEED (1). NOTE: a remark for the report.
set -euo pipefail
build=${1:-build/release}
out=${2:-docs/experiments}
quack=$build/quack
[[ -x $quack ]] || { echo "incast.sh: $quack missing; run 'make release' first" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
ini=$here/scenarios/incast.ini
mkdir -p "$out"
# WORK_DIR: keep the runs there (default: a temporary directory, removed at
# exit); a row whose run another invocation started there (its incast.ini
# exists) is not run again: this one waits for that run's table and uses it.
if [[ -n ${WORK_DIR:-} ]]; then
    tmp=$WORK_DIR
    mkdir -p "$tmp"
else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
fi
d1=${DURATION_1G:-900s}
d10=${DURATION_10G:-60s}
rpcs=${RPCS:-10000}
jobs=${JOBS:-2}
seed=${SEED:-1}
rows="cubic dctcp dctcp-bug prague"
# rows_of RATE: the rows run at that rate (10g adds DCTCP at K = 20, see the report)
rows_of() { if [[ $1 == 10g ]]; then echo "$rows dctcp-k20"; else echo "$rows"; fi; }

# make_ini RATE ROW DIR [RPCS] -> scenario file for that rate (1g|10g) and row
# (the diagnostic rows: dctcp-hosts, dctcp-jitter-sN, cubic-jitter-sN, dctcp-af)
make_ini() {
    local rate=$1 row=$2 dir=$3 n=${4:-$rpcs} cc=dctcp bug=0 aqm=step kt=200us k=65 jit= af=off hosts=0 burst=
    case $row in
    cubic) cc=cubic ;;
    dctcp-bug) bug=1 ;;
    dctcp-k20) k=20 ;;
    prague) cc=prague aqm=dualpi2 ;;
    dctcp-hosts) hosts=1 ;;
    dctcp-jitter-s*) jit=10us ;;
    dctcp-burst10) burst=10 ;;
    dctcp-burst10-jitter-s*) burst=10 jit=10us ;;
    cubic-jitter-s*) cc=cubic jit=10us ;;
    dctcp-af) af=auto ;;
    esac
    # K's drain time for DualPI2's L step: 20 x 1242 B at 1 Gbit/s, 65 at 10.
    [[ $rate == 10g ]] && kt=65us
    # jit: per-packet jitter on the access links (seeded by the run's seed;
    # FIFO kept, docs/sim.md); hosts: s1 and s2 swapped in the from lines.
    awk -v k="$k" -v rpcs="$n" -v cc="$cc" -v bug="$bug" -v aqm="$aqm" -v kt="$kt" -v rate="$rate" -v dir="$dir" \
        -v jit="$jit" -v af="$af" -v hosts="$hosts" -v burst="$burst" '
        /^\[/ { sec = $0; if (flow != "") flow = ""; if (sec ~ /^\[flow\./) flow = substr(sec, 7, length(sec) - 7) }
        /^interval/ { print "interval = 1ms"; print "stop_rpcs = " rpcs; print "stop_rpc_size = 1MB"; next }
        /^delay/ && sec == "[link.access]" && jit != "" { print; print "jitter = " jit; next }
        /^ack_frequency/ { print "ack_frequency = " af; next }
        /^from = s[12]$/ && hosts { print ($3 == "s1") ? "from = s2" : "from = s1"; next }
        /^rate/ && rate == "10g" { print (sec == "[link.forward]" || sec == "[link.return]") ? "rate = 10gbit" : "rate = 25gbit"; next }
        /^step_k/ && rate == "10g" { print "step_k = " k "pkt"; next }
        /^aqm/ && aqm == "dualpi2" { print "aqm = dualpi2"; print "dualpi2_l_thresh = " kt; print "dualpi2_l_range = 0"; next }
        /^cc =/ { print "cc = " cc; if (bug) print "ecn_ack_bug = on"; if (burst != "") print "pacing_burst = " burst; if (flow ~ /^rpc/) print "latency_csv = " dir "/" flow ".csv"; next }
        { print }' "$ini" >"$dir/incast.ini"
}

# pct FILE P -> P-th percentile (ms) of the latency_us column of FILE
pct() {
    awk -F, 'NR > 1 { print $2 }' "$1" | sort -g | awk -v p="$2" '{ v[NR] = $1 }
        END { i = int(p / 100 * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.3f", v[i] / 1000 }'
}

# mbps FLOW TABLE -> that flow's goodput (Mbit/s) from a `quack sim` table
mbps() {
    awk -v f="$1" '$1 == f { v = $5; m = (v ~ /G$/) ? 1000 : 1; sub(/[MG]$/, "", v); printf "%.0f", v * m }' "$2"
}

# conn FLOW KEY TABLE -> the value of KEY=... in that flow's extra column
conn() {
    awk -v f="$1" -v k="$2" '$1 == f { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$3"
}

# tail_s2 SIZE DIR -> % of the slowest 0.1 % RPCs (at or above the merged
# p99.9) that sender 2's connection made
tail_s2() {
    local t
    t=$(pct "$2/all-$1.csv" 99.9)
    awk -F, -v t="$t" 'FNR > 1 && $2 / 1000 >= t { n++; if (FILENAME ~ /2\.csv$/) s++ } END { printf "%.0f", n ? 100 * s / n : 0 }' \
        "$2/rpc${1}1.csv" "$2/rpc${1}2.csv"
}

# run_row RATE ROW: one run, its summary lines into $tmp/row-RATE-ROW.csv
run_row() {
    local rate=$1 row=$2 dur=$d1 dir fwd occ lk size n end bulk
    [[ $rate == 10g ]] && dur=$d10
    dir=$tmp/$rate-$row
    if [[ -e $dir/incast.ini ]]; then
        echo "incast.sh: $rate $row: using the run in $dir" >&2
        while [[ ! -s $dir/table.txt ]]; do sleep 10; done
        sleep 2
    else
        mkdir -p "$dir/csv"
        make_ini "$rate" "$row" "$dir"
        echo "incast.sh: $rate $row (until $rpcs 1 MB RPCs, at most $dur simulated)" >&2
        "$quack" sim "$dir/incast.ini" --duration "$dur" --seed "$seed" --out "$dir/csv" --quiet \
            >"$dir/table.txt.part"
        mv "$dir/table.txt.part" "$dir/table.txt"
    fi
    # simulated seconds the run lasted (stop_rpcs, else the cap)
    end=$(awk '/^stopped at/ { print $3 }' "$dir/table.txt")
    [[ -n $end ]] || end=${dur%s}
    fwd=$dir/csv/link_forward.csv
    # queue occupancy: 1 ms samples after the first 100 ms
    occ=$(awk -F, 'NR > 1 && $1 >= 0.1 { print $3 }' "$fwd" | sort -g |
        awk '{ v[NR] = $1; s += $1 } END { i = int(0.99 * NR + 0.999999); printf "%.2f,%d", s / NR, v[i] }')
    lk=$(awk '$1 == "forward" { print $4 + $5 "," $8 }' "$dir/table.txt")
    bulk=$(($(mbps bulk1 "$dir/table.txt") + $(mbps bulk2 "$dir/table.txt")))
    : >"$tmp/row-$rate-$row.csv"
    for size in 1m 10k; do
        cat "$dir/rpc${size}1.csv" <(tail -n +2 "$dir/rpc${size}2.csv") >"$dir/all-$size.csv"
        n=$(($(wc -l <"$dir/all-$size.csv") - 1))
        echo "$rate,$row,$size,$n,$(pct "$dir/all-$size.csv" 50),$(pct "$dir/all-$size.csv" 99),$(pct "$dir/all-$size.csv" 99.9),$(pct "$dir/all-$size.csv" 100),$occ,$lk,$end,$bulk,$(pct "$dir/rpc${size}1.csv" 50),$(pct "$dir/rpc${size}2.csv" 50),$(tail_s2 $size "$dir"),$(($(conn rpc${size}1 lost "$dir/table.txt") + $(conn rpc${size}2 lost "$dir/table.txt"))),$(($(conn rpc${size}1 pto "$dir/table.txt") + $(conn rpc${size}2 pto "$dir/table.txt"))),$(conn rpc${size}1 ecn "$dir/table.txt")$(conn rpc${size}2 ecn "$dir/table.txt")" >>"$tmp/row-$rate-$row.csv"
        # CDF points (ms, fraction)
        awk -F, 'NR > 1 { print $2 / 1000 }' "$dir/all-$size.csv" | sort -g |
            awk -v n="$n" '{ if (NR % (int(n / 2000) + 1) == 0 || NR == n) printf "%.4f %.6f\n", $1, NR / n }' \
                >"$tmp/cdf-$rate-$size-$row.dat"
    done
}
# marks_mb FLOW TABLE -> CE marks per MB the flow sent
marks_mb() {
    awk -v f="$1" '$1 == f { printf "%.0f", $3 ? $7 / ($3 / 1e6) : 0 }' "$2"
}

# diag_line ROW SEED DIR -> the diagnostic table's line for the run in DIR
diag_line() {
    local t=$3/table.txt f line
    cat "$3/rpc1m1.csv" <(tail -n +2 "$3/rpc1m2.csv") >"$3/all-1m.csv"
    cat "$3/rpc10k1.csv" <(tail -n +2 "$3/rpc10k2.csv") >"$3/all-10k.csv"
    line="$1,$2,$(($(wc -l <"$3/all-1m.csv") - 1))"
    for f in bulk1 rpc1m1 bulk2 rpc1m2; do line+=",$(mbps $f "$t"),$(marks_mb $f "$t")"; done
    line+=",$(($(mbps rpc10k1 "$t") + $(mbps rpc10k2 "$t"))),$(pct "$3/rpc1m1.csv" 50),$(pct "$3/rpc1m2.csv" 50),$(pct "$3/all-1m.csv" 99.9)"
    # the senders' access links (shared by a sender's three connections): largest queue, bytes
    echo "$line,$(awk '$1 ~ /^access\.s[12]\.up$/ && $9 > m { m = $9 } END { print m + 0 }' "$t"),$(pct "$3/all-10k.csv" 50)"
}

# diag_row ROW: a diagnostic run at 1 Gbit/s until DIAG_RPCS 1 MB RPCs (seed:
# the -sN suffix, else SEED); its line into $tmp/diag-ROW.csv
diag_row() {
    local row=$1 s=$seed dir
    [[ $row == *-s[0-9]* ]] && s=${row##*-s}
    dir=$tmp/diag-$row
    if [[ ! -s $dir/table.txt ]]; then
        mkdir -p "$dir/csv"
        make_ini 1g "$row" "$dir" "$diag_rpcs"
        echo "incast.sh: 1g $row (diagnostic: until $diag_rpcs 1 MB RPCs, seed $s)" >&2
        "$quack" sim "$dir/incast.ini" --duration "$d1" --seed "$s" --out "$dir/csv" --quiet \
            >"$dir/table.txt.part"
        mv "$dir/table.txt.part" "$dir/table.txt"
    fi
    diag_line "$row" "$s" "$dir" >"$tmp/diag-$row.csv"
}
diag_rpcs=${DIAG_RPCS:-2000}
diag_rows="dctcp dctcp-burst10 dctcp-jitter-s1 dctcp-jitter-s2 dctcp-jitter-s3 dctcp-burst10-jitter-s1"
[[ ${DIAG:-1} != 0 ]] || diag_rows=
diag=$tmp/diag.csv

summary=$tmp/summary.csv
if [[ -n ${REPORT_ONLY:-} ]]; then
    # REPORT_ONLY=1: rewrite incast.md from OUT_DIR/incast.csv and the PNGs of
    # an earlier run (DURATION_* must be the ones that run used, MEASURED_AT
    # its commit).
    cp "$out/incast.csv" "$summary"
    if [[ -e $out/incast-diag.csv ]]; then cp "$out/incast-diag.csv" "$diag"; else : >"$diag"; fi
else
    # JOBS runs at a time, the long 1 Gbit/s ones first
    pids=()
    for job in 1g:cubic 1g:dctcp 1g:dctcp-bug 1g:prague 10g:cubic 10g:dctcp 10g:dctcp-bug 10g:prague 10g:dctcp-k20 \
        $(for r in $diag_rows; do echo "diag:$r"; done); do
        while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
        if [[ $job == diag:* ]]; then
            diag_row "${job#diag:}" &
        else
            run_row "${job%%:*}" "${job#*:}" &
        fi
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    echo "row,seed,rpcs_1m,bulk1_mbps,bulk1_marks_mb,rpc1m1_mbps,rpc1m1_marks_mb,bulk2_mbps,bulk2_marks_mb,rpc1m2_mbps,rpc1m2_marks_mb,rpc10k_mbps,s1_p50_ms,s2_p50_ms,p999_ms,access_max_queue_bytes,p50_10k_ms" >"$diag"
    if [[ -n $diag_rows ]]; then
        for r in $diag_rows; do cat "$tmp/diag-$r.csv"; done >>"$diag"
    fi
    cp "$diag" "$out/incast-diag.csv"
    echo "rate,row,size,rpcs,p50_ms,p99_ms,p999_ms,max_ms,q_mean_pkts,q_p99_pkts,drops,marks,sim_s,bulk_mbps,s1_p50_ms,s2_p50_ms,tail_s2_pct,lost_pkts,ptos,ecn_states" >"$summary"
    for rate in 1g 10g; do
        for row in $(rows_of $rate); do cat "$tmp/row-$rate-$row.csv"; done
    done >>"$summary"
    cp "$summary" "$out/incast.csv"
fi

# CDF plots: one PNG per rate, 1 MB and 10 KB panels
for rate in $([[ -n ${REPORT_ONLY:-} ]] || echo 1g 10g); do
    plot="set terminal pngcairo size 1200,500 font ',10'; set output '$out/incast-$rate.png'; set multiplot layout 1,2;"
    for size in 1m 10k; do
        label=$([[ $size == 1m ]] && echo "1 MB" || echo "10 KB")
        plot+="set title '$label RPCs, $rate bottleneck'; set logscale x; set xlabel 'completion time (ms)';"
        plot+="set ylabel 'CDF'; set key bottom right; set grid; plot"
        sep=""
        for row in $(rows_of $rate); do
            plot+="$sep '$tmp/cdf-$rate-$size-$row.dat' using 1:2 with lines lw 2 title '$row'"
            sep=","
        done
        plot+=";"
    done
    plot+="unset multiplot"
    gnuplot -e "$plot"
done

# diag_report: the diagnostic runs' table and what they show (from $diag)
diag_report() {
    echo "**Pacing and how the window-limited DCTCP connections share: diagnostic runs.** The same"
    echo "1 Gbit/s DCTCP scenario, each run until $diag_rpcs 1 MB RPCs. dctcp: as in the table above,"
    echo "with quack's pacing for DCTCP (bursts of at most 2 datagrams, \`conn_send.c\`"
    echo "\`pacer_floor_pkts\`, as for Prague); dctcp-burst10: the burst allowance RFC 9002 §7.7 gives"
    echo "any controller (the initial window, 10 datagrams; \`pacing_burst = 10\`), which is what"
    echo "quack used for DCTCP before; -jitter-sN adds a seeded random delay of 0-10 us to every"
    echo "packet on the access links (about one packet's serialization time at the bottleneck, FIFO"
    echo "order per link kept; seed N), which reshuffles which sender's packet reaches the bottleneck"
    echo "first (without it this scenario draws no random numbers that change its timing). Per"
    echo "connection: Mbit/s and, in brackets, the CE marks it received per MB it sent."
    echo
    echo "| run | seed | 1 MB RPCs | bulk1 | rpc1m1 | bulk2 | rpc1m2 | 10 KB Mbit/s (both) | 10 KB p50 ms | 1 MB p50 ms s1 / s2 | 1 MB p99.9 ms |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    tail -n +2 "$diag" | awk -F, '{ printf "| %s | %s | %s | %s (%s) | %s (%s) | %s (%s) | %s (%s) | %s | %s | %s / %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $17, $13, $14, $15 }'
    echo
    awk -F, 'NR > 1 {
            lo = hi = $4; for (i = 6; i <= 10; i += 2) { if ($i < lo) lo = $i; if ($i > hi) hi = $i }
            spread[$1] = sprintf("%d-%d Mbit/s (max / min %.2f)", lo, hi, lo ? hi / lo : 0); ratio[$1] = lo ? hi / lo : 0
            p999[$1] = $15; p10k[$1] = $17; m10k[$1] = $12
            if ($1 ~ /burst10/) for (i = 4; i <= 10; i += 2) { n++; x[n] = $i; y[n] = $(i + 1) }
            if ($1 ~ /^dctcp(-jitter-s[0-9]+)?$/ && ratio[$1] > worst) worst = ratio[$1]
        }
        END {
            printf "- The four window-limited connections (two bulk uploads, two 1 MB RPC streams) get %s paced\n", spread["dctcp"]
            printf "  and %s with the 10-datagram allowance; over the paced runs with jitter the\n", spread["dctcp-burst10"]
            printf "  widest split is max / min %.2f, with the allowance and jitter (seed 1) %s.\n", worst, spread["dctcp-burst10-jitter-s1"]
            if (n > 1) {
                mx = my = 0; for (i = 1; i <= n; i++) { mx += x[i]; my += y[i] } mx /= n; my /= n
                sxy = sxx = syy = 0; for (i = 1; i <= n; i++) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) ^ 2; syy += (y[i] - my) ^ 2 }
                cor = (sxx > 0 && syy > 0) ? sxy / sqrt(sxx * syy) : 0
                printf "- With the allowance, rate and marks per MB correlate at %.2f across those %d connections: the\n", cor, n
                printf "  connection ahead is the one that collects fewer marks.\n"
            }
            printf "- The cost of pacing: the 10 KB requests (9 datagrams) are spread over a round trip instead of\n"
            printf "  leaving as one burst, so a 10 KB RPC takes %s ms at the median instead of %s, and that class\n", p10k["dctcp"], p10k["dctcp-burst10"]
            printf "  carries %s instead of %s Mbit/s; the 1 MB p99.9 goes from %s to %s ms.\n", m10k["dctcp"], m10k["dctcp-burst10"], p999["dctcp-burst10"], p999["dctcp"]
        }' "$diag"
    echo
    echo "The mechanism, with the 10-datagram allowance: DCTCP's windows here are 3-8 packets (about"
    echo "2 / alpha per RFC 8257 §3.5's one cut per window of data), so the pacer never held a packet and"
    echo "the connections were ACK-clocked: the order of their packets in the queue repeated from one"
    echo "round trip to the next (each departure's ACK released the next packet at the queue's tail)."
    echo "The 10 KB requests arrive as bursts, so the queue rises and drains in a sawtooth within that"
    echo "cycle, and a step marker at K = 20 marks by position in it: a connection whose packets"
    echo "arrived when the queue was short got fewer marks, a smaller alpha and a larger window, which"
    echo "kept it where it was; additive increase of one packet per round trip did not pull the"
    echo "windows together, and jitter of a packet time moved the positions but not the pattern."
    echo "Paced at cwnd / smoothed RTT (RFC 9002 §7.7, N = 1) in bursts of at most 2 datagrams, every"
    echo "connection's packets are spread over the round trip and sample the sawtooth alike, so marks"
    echo "come in proportion to what each sends (RFC 9331 §4.3 asks the same of L4S senders, whose"
    echo "marks also come per packet)."
    echo
}

# queue_model: DCTCP's steady-state queue (Alizadeh et al., "Data Center TCP",
# SIGCOMM 2010, §3.3) for N flows, base RTT 100 us, 1242-byte packets, against
# the measured mean occupancy
queue_model() {
    echo "**DCTCP's queue: the DCTCP paper's steady-state model against the measured mean.** For N"
    echo "synchronised window-limited flows (Alizadeh et al., SIGCOMM 2010, §3.3) the queue is a"
    echo "sawtooth between Q_max = K + N and Q_min = Q_max - A, A = (1/2) sqrt(2 N (C x RTT + K))"
    echo "packets (C x RTT: the bandwidth-delay product in 1242-byte packets at the 100 us base RTT);"
    echo "its mean is about Q_max - A / 2. N = 4 (the two bulk and two 1 MB connections; the 10 KB"
    echo "ones are latency-bound), in brackets N = 6:"
    echo
    echo "| rate | row | K pkts | C x RTT pkts | Q_max | A | model mean | measured mean | measured p99 | CUBIC mean / 3 |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -F, 'NR > 1 && $3 == "1m" { q[$1 "," $2] = $9; q99[$1 "," $2] = $10 }
        function amp(n, bdp, k) { return 0.5 * sqrt(2 * n * (bdp + k)) }
        END {
            split("1g,dctcp,20 10g,dctcp,65 10g,dctcp-k20,20", R, " ")
            for (i = 1; i <= 3; i++) {
                split(R[i], f, ","); bdp = (f[1] == "1g" ? 1e9 : 1e10) * 100e-6 / (1242 * 8); k = f[3]
                if (!((f[1] "," f[2]) in q)) continue
                printf "| %s | %s | %d | %.1f | %d (%d) | %.1f (%.1f) | %.1f (%.1f) | %s | %s | %.1f |\n", f[1], f[2], k, bdp, k + 4, k + 6, amp(4, bdp, k), amp(6, bdp, k), k + 4 - amp(4, bdp, k) / 2, k + 6 - amp(6, bdp, k) / 2, q[f[1] "," f[2]], q99[f[1] "," f[2]], q[f[1] ",cubic"] / 3
            }
            bdp = 1e10 * 100e-6 / (1242 * 8); t = q["10g,cubic"] / 3
            for (k = 1; k <= 100 && k + 4 - amp(4, bdp, k) / 2 <= t; k++) kmax = k
            printf "\nAt 10 Gbit/s and K = 65 the model%ss mean is %.0f packets above a third of CUBIC%ss mean\n", "\047", 65 + 4 - amp(4, bdp, 65) / 2 - t, "\047"
            printf "(%.1f packets); it is within that third only for K <= %d packets (N = 4). The measured means follow\n", t, kmax
            printf "the model, so nothing adds a standing queue beyond what DCTCP%ss step at K implies (no\n", "\047"
            printf "excess from pacing bursts, ACK frequency or the once-per-window reaction): the 10 Gbit/s\n"
            printf "queue target is out of reach at K = 65 by construction and met at K = 20 (dctcp-k20).\n"
        }' "$summary"
    echo
}

# The report
{
    echo "# Incast: RPC tail latency with CUBIC, DCTCP, DCTCP with the seed's bug, and Prague"
    echo
    echo "Written by \`bench/incast.sh\` (seed $seed; each run until the 1 MB connections completed"
    echo "$rpcs RPCs, at most $d1 simulated at 1 Gbit/s and $d10 at 10 Gbit/s: the sim s column;"
    echo "release build; commit ${MEASURED_AT:-$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)}). Do not edit by hand."
    # NOTE: a remark on how this measurement was taken (e.g. runs cut short)
    [[ -z ${NOTE:-} ]] || { echo; echo "**Note.** $NOTE"; }
    echo
    echo "Setup (\`bench/scenarios/incast.ini\`, shared/seeds/003): 2 senders -> 1 receiver, a"
    echo "bottleneck of 1 Gbit/s (K = 20 packets) or 10 Gbit/s (K = 65), base RTT ~100 us, a"
    echo "**100-packet buffer** (occupancy below is at that size), step CE marking at K. Per sender"
    echo "three QUIC connections: a bulk upload, back-to-back 1 MB RPCs and back-to-back 10 KB RPCs"
    echo "(request of that size, 1-byte response; completion = request start to response FIN)."
    echo "Latencies of both senders are merged (s1 / s2 p50: each sender's own median). ACK frequency"
    echo "is off on every row (RFC 9000). p99.9 of N RPCs is the ceil(0.999 N)-th smallest."
    echo "RPC Mbit/s: what that RPC class (both senders) carried, RPCs x size / sim s; bulk Mbit/s:"
    echo "the two bulk uploads together. Slowest 0.1 %: the share of the RPCs at or above the p99.9"
    echo "that sender 2's connection made; lost / PTOs: packets declared lost and PTOs of the two"
    echo "RPC connections of that size over the run; ECN: their validation state at the end (2 ="
    echo "capable, 3 = failed, 0 = off; RFC 9000 §13.4.2)."
    echo
    echo "| rate | row | RPC | RPCs | sim s | RPC Mbit/s | bulk Mbit/s | p50 ms | p99 ms | p99.9 ms | max ms | s1 / s2 p50 ms | slowest 0.1 % from s2 | lost / PTOs | ECN s1 / s2 | queue mean pkts | queue p99 pkts | drops | marks |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    tail -n +2 "$summary" | awk -F, '{ b = ($3 == "1m" ? 1000000 : 10000)
        printf "| %s | %s | %s | %s | %.2f | %.0f | %s | %s | %s | %s | %s | %s / %s | %s %% | %s / %s | %s / %s | %s | %s | %s | %s |\n", $1, $2, ($3 == "1m" ? "1 MB" : "10 KB"), $4, $13, $4 * b * 8 / $13 / 1e6, $14, $5, $6, $7, $8, $15, $16, $17, $18, $19, substr($20, 1, 1), substr($20, 2, 1), $9, $10, $11, $12 }'
    echo
    echo "![1 Gbit/s CDFs](incast-1g.png)"
    echo
    echo "![10 Gbit/s CDFs](incast-10g.png)"
    echo
    echo "## Checks"
    echo
    awk -F, -v want="$rpcs" 'NR > 1 { k = $1 "," $3; p[k "," $2] = $7; q[$1 "," $2] = $9; if ($3 == "1m") n[$1 " " $2] = $4 }
        END {
            split("1g 10g", R, " "); split("1m 10k", S, " ")
            for (i = 1; i <= 2; i++) {
                for (j = 1; j <= 2; j++) {
                    k = R[i] "," S[j]
                    printf "- %s %s: DCTCP p99.9 %s ms vs CUBIC %s ms: %s\n", R[i], S[j], p[k ",dctcp"], p[k ",cubic"], (p[k ",dctcp"] + 0 <= p[k ",cubic"] + 0 ? "**met**" : "**not met**")
                }
                printf "- %s queue: DCTCP mean %s packets vs CUBIC %s: %s (target <= 1/3)\n", R[i], q[R[i] ",dctcp"], q[R[i] ",cubic"], (q[R[i] ",dctcp"] * 3 <= q[R[i] ",cubic"] ? "**met**" : "**not met**")
            }
            for (k in n) if (n[k] + 0 < want + 0) short = short " " k
            printf "- 10g queue at K = 20: DCTCP mean %s packets vs CUBIC %s: %s (target <= 1/3)\n", q["10g,dctcp-k20"], q["10g,cubic"], (q["10g,dctcp-k20"] * 3 <= q["10g,cubic"] ? "**met**" : "**not met**")
            k = "10g,1m"
            printf "- 10g 1m at K = 20: DCTCP p99.9 %s ms vs CUBIC %s ms: %s\n", p[k ",dctcp-k20"], p[k ",cubic"], (p[k ",dctcp-k20"] + 0 <= p[k ",cubic"] + 0 ? "**met**" : "**not met**")
            printf "- at least %d 1 MB RPCs per row: %s\n", want, (short == "" ? "**met**" : "**not met** (" short " )")
        }' "$summary"
    echo
    echo "## Reading the rows"
    echo
    echo "**The bug row, and why its tail is tens of milliseconds in QUIC.** Linux DCTCP's receiver"
    echo "acknowledges at once when the CE state of arriving packets changes, first sending an ACK"
    echo "for the packets before the change if a delayed ACK was pending. The seed's bug: that ACK"
    echo "cancelled the delayed-ACK timer, so the packet that changed the state was owed no ACK; a"
    echo "sender at a one- or two-packet window then waited for the 40 ms delayed-ACK timer or the"
    echo "200 ms minimum RTO (43 / 208 ms p99 / p99.9 in the seed). The scenario key \`ecn_ack_bug\` makes quack's"
    echo "receiver do the same (src/transport/recovery/ack.c; tests/unit/test_ack.c replays the sequence). In"
    echo "QUIC the forgotten packet is acknowledged only with the next ack-eliciting packet; with RFC"
    echo "9000's every-second-packet rule a lone packet waits max_ack_delay (25 ms), and a sender at"
    echo "its minimum window (2 packets, RFC 9002 §7.2) sends that next packet only when an ACK frees"
    echo "the window or its PTO fires (smoothed RTT + 4 RTT variance + max_ack_delay, about 26 ms here:"
    echo "RFC 9002 has no 200 ms minimum RTO). So each stall costs 25-50 ms, not 200 ms."
    echo
    echo "**ACK frequency is off on every row.** With quack's default (\`auto\`, ack-frequency-12) a"
    echo "window-limited sender asks for an IMMEDIATE_ACK (src/transport/recovery/ackfreq.c), which frees the"
    echo "stalled packet within a round trip and would hide the bug; off is the plain RFC 9000"
    echo "receiver, as in the seed, and the other rows use it too so that the rows differ only in"
    echo "the controller (and the receiver's CE rule)."
    echo
    echo "**The 1 MB tail at 1 Gbit/s: where it comes from.** Each 1 MB connection carries its RPCs"
    echo "back to back, so its window and DCTCP's alpha persist from one RPC to the next (the idle gap"
    echo "is the 1-byte response, one round trip; RFC 9002 §7.8 freezes the window while"
    echo "application-limited, and no RFC asks for a restart after so short a gap): the start-up and"
    echo "the initial alpha = 1 (RFC 8257 §3.3) touch only the first RPC of 10,000. DCTCP reacts once"
    echo "per window (RFC 8257 §3.5), a round trip of 0.1-0.4 ms here, against RPCs of tens of ms."
    echo "The lost / PTOs and ECN columns rule out the other suspects for the tail, and what is left"
    echo "is how the link is shared, computed from the table:"
    echo
    awk -F, 'NR > 1 && $1 == "1g" { b = ($3 == "1m" ? 1000000 : 10000); m[$2 "," $3] = $4 * b * 8 / $13 / 1e6
            p50[$2 "," $3] = $5; p999[$2 "," $3] = $7; bulk[$2] = $14; s1[$2 "," $3] = $15; s2[$2 "," $3] = $16; ts2[$2 "," $3] = $17; lost[$2 "," $3] = $18; pto[$2 "," $3] = $19; ecn[$2 "," $3] = $20 }
        END {
            printf "- Losses and timeouts: the two 1 MB DCTCP connections lost %s packets and ran %s PTOs over\n", lost["dctcp,1m"], pto["dctcp,1m"]
            printf "  the run (CUBIC: %s and %s, drops at the full buffer); their ECN validation ended in state\n", lost["cubic,1m"], pto["cubic,1m"]
            printf "  %s / %s (2 = capable: ECN was never disabled).\n", substr(ecn["dctcp,1m"], 1, 1), substr(ecn["dctcp,1m"], 2, 1)
            printf "- The 10 KB connections are latency-bound: an RPC of theirs takes %s ms (p50) with\n", p50["dctcp,10k"]
            printf "  the short DCTCP queue and %s ms with the full CUBIC one, so together they carry %.0f Mbit/s\n", p50["cubic,10k"], m["dctcp,10k"]
            printf "  with DCTCP and %.0f with CUBIC. The four window-limited connections (two bulk, two 1 MB)\n", m["cubic,10k"]
            printf "  share the rest; at equal shares a 1 MB RPC would take 8 Mbit / ((1000 - %.0f) / 4 Mbit/s)\n", m["dctcp,10k"]
            printf "  = %.1f ms with DCTCP and %.1f ms with CUBIC (measured p50: %s and %s ms).\n", 8000 / ((1000 - m["dctcp,10k"]) / 4), 8000 / ((1000 - m["cubic,10k"]) / 4), p50["dctcp,1m"], p50["cubic,1m"]
            printf "  So DCTCP starts %.2f times behind at the median: to match CUBIC%ss p99.9 (%s ms) its\n", (1000 - m["cubic,10k"]) / (1000 - m["dctcp,10k"]), "\047", p999["cubic,1m"]
            printf "  1 MB p99.9 would have to stay within %.2f times that equal-share time.\n", p999["cubic,1m"] / (8000 / ((1000 - m["dctcp,10k"]) / 4))
            printf "- How the four window-limited connections share it: sender 1%ss 1 MB connection has a p50 of\n", "\047"
            printf "  %s ms, sender 2%ss %s ms; %s %% of the slowest 0.1 %% are sender 2%ss (bulk uploads: %s\n", s1["dctcp,1m"], "\047", s2["dctcp,1m"], ts2["dctcp,1m"], "\047", bulk["dctcp"]
            printf "  Mbit/s together). Equal shares need pacing at these windows: see the diagnostic runs below.\n"
        }' "$summary"
    echo
    echo "What is left is a property of the workload (closed-loop RPCs, where a shorter queue buys the"
    echo "latency-bound class bandwidth), not a stall in single RPCs: compare the 10 KB rows, and the"
    echo "10 Gbit/s rows, where the 1 MB connections hold windows of tens of packets."
    echo
    if [[ -s $diag ]] && (($(wc -l <"$diag") > 1)); then
        diag_report
    fi
    queue_model
    echo "**Queue occupancy at 10 Gbit/s.** DCTCP marks only above K (RFC 8257 §3.1), so it holds"
    echo "the queue near K: with K = 65 in a 100-packet buffer that is two thirds of a full buffer,"
    echo "and a third of CUBIC's mean (which at most fills the 100 packets) is out of reach. K = 65"
    echo "is the DCTCP paper's setting for 10 Gbit/s, well above its own guideline K > C x RTT / 7"
    echo "(about 14 packets at 10 Gbit/s and 100 us) to absorb its hosts' bursts (segmentation"
    echo "offload); quack paces. The dctcp-k20 row runs DCTCP at K = 20 on the 10 Gbit/s link (a"
    echo "deviation from the issue's K = 65, reported beside it, not instead); the checks above say"
    echo "whether it meets the 1/3 target, its RPC Mbit/s column what the smaller K costs."
    echo
    echo "**Deviations from the seed's setup.** The seed measured Linux TCP on real hosts and does not"
    echo "state the link rate (its CUBIC 1 MB p99 of 2.6 ms implies a 10 Gbit/s-class path); here"
    echo "QUIC runs in a deterministic simulator with no host jitter, 1242-byte QUIC datagrams instead of"
    echo "1500-byte segments (K counts packets, as the DCTCP paper does), the issue's 100-packet buffer,"
    echo "and ACK frequency off on every row. The bug's stall is bounded by QUIC's max_ack_delay and PTO"
    echo "(tens of ms), not by TCP's 40 ms delayed ACK and 200 ms minimum RTO."
    echo
    echo "**Prague** runs over DualPI2 (RFC 9332) whose L queue marks at K's drain time (a step);"
    echo "with only L4S traffic the coupling to the (empty) classic queue plays no part."
} >"$out/incast.md.tmp"
mv "$out/incast.md.tmp" "$out/incast.md"
echo "incast.sh: wrote $out/incast.md, $out/incast.csv, $out/incast-1g.png, $out/incast-10g.png" >&2
