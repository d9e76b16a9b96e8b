# SPDX-License-Identifier: MIT
# Parts 7 and 8 of bench/cc.sh (sourced by it; uses its $bin $out $tmp
# $seed $dur2 $jobs, run and part): bbr-lt, the loss-tolerant BBR
# (docs/cc.md "Loss that is not congestion"), against the draft's BBR and
# CUBIC.
#   7. random loss: one 120 s download (DUR7) per row, goodput over its
#      second half, on 100 Mbit/s x 50 ms at 2/3/5/10 % Bernoulli loss and
#      Gilbert-Elliott bursts of 3 % on average, 20 Mbit/s x 300 ms at 5 %,
#      1 Gbit/s x 100 ms at 1 % (2-BDP drop-tail buffers, loss on the data
#      direction; bench_cc series, 5 s steps, which also draw the PNG);
#      congestion safety: retransmitted fraction and p95 queueing delay on
#      0.5/1/2/5-BDP buffers (clean, DUR7S s), the share against one CUBIC
#      flow on 2 BDP (DUR2), the queue after the bottleneck falls from 100
#      to 10 Mbit/s, and two flows of one controller with the second 0, 1,
#      2, 3 or 5 s late (smaller flow's share over 20-30 s, 1 and 2 BDP).
#   8. part 7's random-loss rows for bbr-lt on other paths: 20/50/200
#      Mbit/s at 50 ms, 20/80/150 ms at 100 Mbit/s, and seeds 2-4 on
#      100 Mbit/s x 50 ms, at 2/3/5/10 % loss; on 50 and 200 Mbit/s at
#      50 ms, 20, 80 and 100 ms at 100 Mbit/s and 150 Mbit/s x 80 ms (the
#      largest BDPs, where convergence is slowest), two bbr-lt flows (1 and 2
#      BDP, the second 0/1.5/2/3.5/5 s late, shares over 20-30 s; without random
#      loss a run does not depend on the seed); and at 3 % loss on those
#      paths and seeds 1-4 of 100 Mbit/s x 50 ms, CUBIC alone against CUBIC
#      beside bbr-lt (over 10-40 s).
#   9. item 2's two-flow clause on four grids of paths (`bench_cc two CC CC
#      RATE RTT RTT BUF 30 SEED 0 LATE 20`, smaller flow's share over 20-30 s)
#      for bbr-lt, the draft's BBR and CUBIC: A 50/100/150 Mbit/s x
#      30/50/80 ms x 0.75/1/1.5/2 BDP x 0/1.5/3.5 s late (108 runs); B
#      30/80/200 x 20/40/120 ms x 0.5/1/3 BDP x 0.7/2.5/5 s (81); C
#      10/25/60/120 x 10/60/100 ms x 0.5/1.5/4 BDP x 1/3 s (72); D
#      40/120/300 x 30/70/150 ms x 0.75/2 BDP x 0.5/1.2/4 s (54; added in
#      session 22 as a check on paths not used while tuning); and R, two
#      flows with different RTTs (100 Mbit/s, 2 BDP, the second 1 s late:
#      the shorter-RTT flow's share, seven pairs; added in session 23).
# shellcheck shell=bash disable=SC2154

dur7=${DUR7:-120}
dur7s=${DUR7S:-30}
# kcptun's rate on the same path over real sockets: kcptun (--mode fast3,
# FEC off) through netem, 25 ms each way, 100 Mbit/s, random loss on the
# data direction; 6.68 MB/s at 3 %, 5.86 MB/s at 5 % (the transfer's mean
# rate). Constants, not measured by this script (bench/tunnel.sh measures
# kcptun with loss each way).
kcp3_mbit=53.4
kcp5_mbit=46.9

lt_jobs() { # write $tmp/jobs7*, $tmp/jobs8
    local cc loss buf o rate rtt s
    {
        for cc in bbr-lt bbr cubic; do
            for loss in 2 3 5 10 ge3; do echo "series $cc 100 50 $loss 2 $dur7 $seed 5"; done
            echo "series $cc 20 300 5 2 $dur7 $seed 5"
            echo "series $cc 1000 100 1 2 $dur7 $seed 5"
        done
        echo "series bbr-lt@50 100 50 5 2 $dur7 $seed 5"
    } >"$tmp/jobs7"
    {
        for cc in bbr-lt bbr cubic; do
            for buf in 0.5 1 2 5; do echo "one $cc 100 50 0 $buf $dur7s $seed"; done
        done
    } >"$tmp/jobs7b"
    for cc in bbr-lt bbr; do echo "two $cc cubic 100 50 50 2 $dur2 $seed"; done >"$tmp/jobs7c"
    for cc in bbr-lt bbr cubic; do echo "drop $cc 100 10 50 2 10 25 $seed"; done >"$tmp/jobs7d"
    {
        for cc in bbr-lt bbr; do
            for buf in 1 2; do
                for o in 0 1 2 3 5; do echo "two $cc $cc 100 50 50 $buf 30 $seed 0 $o 20"; done
            done
        done
    } >"$tmp/jobs7e"
    {
        for loss in 2 3 5 10; do
            for rate in 20 50 200; do echo "series bbr-lt $rate 50 $loss 2 $dur7 $seed 10"; done
            for rtt in 20 80 150; do echo "series bbr-lt 100 $rtt $loss 2 $dur7 $seed 10"; done
            for s in 2 3 4; do echo "series bbr-lt 100 50 $loss 2 $dur7 $s 10"; done
        done
    } >"$tmp/jobs8"
    local paths8="50,50,1 200,50,1 100,20,1 100,100,1 100,80,1 150,80,1" p
    for p in $paths8; do
        IFS=, read -r rate rtt s <<<"$p"
        for buf in 1 2; do
            for o in 0 1.5 2 3.5 5; do echo "two bbr-lt bbr-lt $rate $rtt $rtt $buf 30 $s 0 $o 20"; done
        done
    done >"$tmp/jobs8b"
    local g cc r t b l
    for cc in bbr-lt bbr cubic; do
        for g in "A|50 100 150|30 50 80|0.75 1 1.5 2|0 1.5 3.5" "B|30 80 200|20 40 120|0.5 1 3|0.7 2.5 5" \
            "C|10 25 60 120|10 60 100|0.5 1.5 4|1 3" "D|40 120 300|30 70 150|0.75 2|0.5 1.2 4"; do
            IFS='|' read -r name rates rtts bufs lates <<<"$g"
            for r in $rates; do for t in $rtts; do for b in $bufs; do for l in $lates; do
                echo "$name two $cc $cc $r $t $t $b 30 $seed 0 $l 20"
            done; done; done; done
        done
        for t in 20/60 40/60 30/90 50/100 60/120 40/120 100/150; do
            echo "R two $cc $cc 100 ${t%/*} ${t#*/} 2 30 $seed 0 1 20"
        done
    done >"$tmp/jobs9"
    for p in 100,50,1 100,50,2 100,50,3 100,50,4 $paths8; do
        IFS=, read -r rate rtt s <<<"$p"
        echo "series cubic $rate $rtt 3 2 40 $s 10"
        echo "two bbr-lt cubic $rate $rtt $rtt 2 40 $s 3 0 10"
    done >"$tmp/jobs8c"
}

hdr_series=cc,rate_mbit,rtt_ms,loss_pct,t_s,goodput_mbit,lost_pct,bbr_mode,max_bw_mbit,bw_shortterm_mbit,inflight_longterm_pkts,cwnd_pkts,pacing_mbit

lt_run7() {
    { echo "$hdr_series"; run "$tmp/jobs7"; } >"$out/congestion-lt-loss.csv"
    { echo "$hdr1"; run "$tmp/jobs7b"; } >"$out/congestion-lt-buffers.csv"
    {
        echo "start2_s,$hdr2"
        run "$tmp/jobs7c" | sed 's/^/0,/'
        paste -d, <(awk '{ print $11 }' "$tmp/jobs7e") <(run "$tmp/jobs7e")
    } >"$out/congestion-lt-share.csv"
    {
        echo "cc,rate1_mbit,rate2_mbit,rtt_ms,buf_bdp,drop_s,settle_s,qd_p95_after_ms,goodput2_mbit,ok"
        run "$tmp/jobs7d"
    } >"$out/congestion-lt-drop.csv"
}

lt_run8() { # the seed is column 14 (a row per 10 s step)
    { echo "seed,$hdr_series"; paste -d, <(awk -v n=$((dur7 / 10)) '{ for (i = 0; i < n; i++) print $8 }' "$tmp/jobs8") \
        <(run "$tmp/jobs8"); } >"$out/congestion-lt-paths.csv"
    { echo "start2_s,$hdr2"; paste -d, <(awk '{ print $11 }' "$tmp/jobs8b") \
        <(run "$tmp/jobs8b"); } >"$out/congestion-lt-paths-share.csv"
    # CUBIC alone: the series' rows after 10 s, averaged; beside bbr-lt: the
    # two-flow row (goodput over 10-40 s)
    run "$tmp/jobs8c" | awk -F, 'NF == 13 { if ($5 > 10) { a[$2 FS $3] += $6; n[$2 FS $3]++ } next }
        { k = $3 FS $4; printf "%s,%.3f,%s,%s,%s\n", k, n[k] ? a[k] / n[k] : 0, $8, $7, $11; delete a[k]; delete n[k] }' |
        paste -d, <(awk '$1 == "two" { print $9 }' "$tmp/jobs8c") - |
        { echo "seed,rate_mbit,rtt_ms,cubic_alone_mbit,cubic_beside_mbit,bbr_lt_mbit,ok"; cat; } >"$out/congestion-lt-paths-cubic.csv"
}

lt_run9() { # grid,late_s,<run two's row>
    {
        echo "grid,start2_s,$hdr2"
        cut -d' ' -f2- "$tmp/jobs9" >"$tmp/jobs9r" # without the grid's name
        paste -d, <(awk '{ print $1 "," $12 }' "$tmp/jobs9") <(run "$tmp/jobs9r")
    } >"$out/congestion-lt-grid.csv"
}

lt_section9() {
    local f=$out/congestion-lt-grid.csv
    [[ -f $f ]] || return 0
    cat <<EOF
### Two flows on four grids of paths (part 9)

Item 2's two-flow clause where neither the suite nor the tables above look:
\`bench_cc two CC CC RATE RTT RTT BUF 30 $seed 0 LATE 20\` (dumbbell, no random
loss), the smaller flow's share over 20-30 s (target: at least 40 %). Grid A:
50/100/150 Mbit/s x 30/50/80 ms x 0.75/1/1.5/2 BDP x 0/1.5/3.5 s late; B:
30/80/200 x 20/40/120 ms x 0.5/1/3 BDP x 0.7/2.5/5 s; C: 10/25/60/120 x
10/60/100 ms x 0.5/1.5/4 BDP x 1/3 s; D (added in session 22, paths not
used while tuning): 40/120/300 x 30/70/150 ms x 0.75/2 BDP x 0.5/1.2/4 s.
CSV congestion-lt-grid.csv.

| grid | cc | runs | under 40 % | least share % | mean link use % |
|---|---|---|---|---|---|
EOF
    awk -F, 'NR > 1 && $1 != "R" { k = $1 FS $3; if (!(k in n)) { o[c++] = k; least[k] = 100 }
            m = $11 < 50 ? $11 : 100 - $11; n[k]++; u[k] += $12; if (m < 40) bad[k]++; if (m < least[k]) least[k] = m }
        END { for (i = 0; i < c; i++) { k = o[i]; split(k, p, FS)
            printf "| %s | %s | %d | %d | %.1f | %.1f |\n", p[1], p[2], n[k], bad[k], least[k], u[k] / n[k] } }' "$f"
    echo
    echo "bbr-lt's runs under 40 % (grid, Mbit/s, RTT ms, buffer BDP, second flow late s: share %):"
    echo
    awk -F, 'NR > 1 && $1 != "R" && $3 == "bbr-lt" { m = $11 < 50 ? $11 : 100 - $11
            if (m < 40) printf "- %s: %s Mbit/s x %s ms, %s BDP, %s s late: %.1f %%\n", $1, $5, $6, $8, $2, m }' "$f"
    echo
    cat <<EOF
Grid R, flows with different RTTs (\`bench_cc two CC CC 100 RTT1 RTT2 2 30 $seed 0 1 20\`,
the second, longer-RTT flow 1 s late): the shorter-RTT flow's share over 20-30 s, %.

| RTT1 / RTT2 ms | bbr-lt | bbr | cubic |
|---|---|---|---|
EOF
    awk -F, 'NR > 1 && $1 == "R" { k = $6 " / " $7; if (!(k in seen)) { seen[k] = 1; o[c++] = k }
            v[k FS $3] = $11 }
        END { for (i = 0; i < c; i++) { k = o[i]
            printf "| %s | %.1f | %.1f | %.1f |\n", k, v[k FS "bbr-lt"], v[k FS "bbr"], v[k FS "cubic"] } }' "$f"
    echo
}

lt_plot() { # goodput over time at 3 and 5 % (part 7's series) with kcptun's rate
    local f=$out/congestion-lt-loss.csv cc loss
    [[ -f $f ]] || return 0
    for cc in bbr-lt bbr cubic; do
        for loss in 3 5; do
            awk -F, -v c=$cc -v l=$loss 'NR > 1 && $1 == c && $2 == 100 && $4 == l {
                print $5 - 2.5, ($6 > 0 ? $6 : 0.01) }' "$f" >"$tmp/lt-$cc-$loss.dat"
        done
    done
    gnuplot <<EOF
set terminal pngcairo size 1100,520
set output '$out/congestion-lt.png'
set termoption noenhanced
set multiplot layout 1,2 title 'one download, 100 Mbit/s x 50 ms, 2-BDP drop-tail, random loss on the data direction (bench_cc series, 5 s bins)'
set xlabel 'time (s), middle of each 5 s bin'
set ylabel 'goodput (Mbit/s)'
set logscale y
set yrange [0.5:120]
set xrange [0:$dur7]
set key outside below horizontal
do for [l in "3 5"] {
  k = (l eq "3") ? $kcp3_mbit : $kcp5_mbit
  set title sprintf('%s %% loss', l)
  plot sprintf('$tmp/lt-bbr-lt-%s.dat', l) using 1:2 with linespoints lw 2 pt 7 ps 0.5 title 'bbr-lt', \
       sprintf('$tmp/lt-bbr-%s.dat', l) using 1:2 with linespoints pt 5 ps 0.5 title 'bbr (draft)', \
       sprintf('$tmp/lt-cubic-%s.dat', l) using 1:2 with linespoints pt 9 ps 0.5 title 'cubic', \
       k with lines dt 2 lw 2 lc rgb 'black' title sprintf('kcptun fast3, real sockets: %.1f', k)
}
unset multiplot
EOF
}

# mean goodput over the second half of each series run, one line per run:
# key (cc,rate,rtt,loss[,seed]) and the mean
lt_half_means() { # lt_half_means FILE KEYCOLS
    awk -F, -v half=$((dur7 / 2)) -v kc="$2" 'NR > 1 {
        k = $1; for (i = 2; i <= kc; i++) k = k FS $i
        if (!(k in seen)) { seen[k] = 1; order[n++] = k }
        if ($(kc + 1) > half) { g[k] += $(kc + 2); c[k]++ } }
        END { for (i = 0; i < n; i++) printf "%s,%.1f\n", order[i], c[order[i]] ? g[order[i]] / c[order[i]] : 0 }' "$1"
}

lt_section7() {
    local f=$out/congestion-lt-loss.csv
    [[ -f $f ]] || return 0
    local h=$((dur7 / 2))
    echo "## 6. bbr-lt: loss that is not congestion"
    echo
    echo "bbr-lt (docs/cc.md \"Loss that is not congestion\") against the draft's BBR"
    echo "and CUBIC. Random loss: one ${dur7} s download per row (\`bench_cc series CC RATE"
    echo "RTT LOSS 2 $dur7 $seed 5\`, CSV congestion-lt-loss.csv), goodput in Mbit/s over"
    echo "$h-$dur7 s; \"ge3\" = Gilbert-Elliott bursts of 3 % on average (bad state: half"
    echo "the packets lost, 10 packets long on average). The targets are the ones"
    echo "tests/sim/test_slow_bbr_lt_loss.c asserts for bbr-lt."
    echo
    echo "| path | loss % | bbr-lt | bbr (draft) | cubic | bbr-lt target |"
    echo "|---|---|---|---|---|---|"
    lt_half_means "$f" 4 | awk -F, '{ k = $2 " Mbit/s x " $3 " ms" FS $4; v[$1, k] = $5
            if (!(k in seen)) { seen[k] = 1; order[n++] = k } }
        END { split("100,50,2:90;100,50,3:90;100,50,5:85;100,50,10:75;100,50,ge3:80;" \
                    "20,300,5:16;1000,100,1:800", T, ";")
            for (i = 1; i in T; i++) { split(T[i], tt, ":"); split(tt[1], q, ",")
                target[q[1] " Mbit/s x " q[2] " ms" FS q[3]] = tt[2] }
            for (i = 0; i < n; i++) { k = order[i]; split(k, p, FS)
                if (!((("bbr-lt") SUBSEP k) in v)) continue
                printf "| %s | %s | %s | %s | %s | ≥ %s |\n", p[1], p[2], v["bbr-lt", k], v["bbr", k], v["cubic", k], target[k] } }'
    lt_half_means "$f" 4 | awk -F, '$1 == "bbr-lt@50" { printf "\nWith `--bandwidth 50mbit` (`bbr-lt@50`) on 100 Mbit/s x 50 ms at 5 %%: %s Mbit/s over %d-%d s (target 45-50).\n", $5, h, e }' h="$h" e="$dur7"
    echo
    echo "![goodput over time at 3 and 5 % loss](congestion-lt.png)"
    echo
    echo "The dashed line is kcptun's rate on this path over real sockets (\`--mode"
    echo "fast3\`, FEC off, through netem, 25 ms each way at 100 Mbit/s, loss on the"
    echo "data direction: $kcp3_mbit Mbit/s at 3 %, $kcp5_mbit at 5 %), a constant in"
    echo "bench/lib/cc_lt.bash, not measured by this script."
    echo
    lt_safety
}

lt_safety() {
    local b=$out/congestion-lt-buffers.csv s=$out/congestion-lt-share.csv d=$out/congestion-lt-drop.csv
    [[ -f $b && -f $s && -f $d ]] || return 0
    echo "### Congestion safety (100 Mbit/s x 50 ms, no random loss)"
    echo
    echo "Retransmitted packets (% of sent, whole run) and the data queue's p95 (ms,"
    echo "sampled every 5 ms from 2 s on), one clean ${dur7s} s download per buffer"
    echo "(\`bench_cc one CC 100 50 0 BUF $dur7s $seed\`, CSV congestion-lt-buffers.csv):"
    echo
    echo "| buffer (BDP) | bbr-lt retx % | bbr retx % | cubic retx % | bbr-lt queue p95 ms | bbr queue p95 ms | cubic queue p95 ms |"
    echo "|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 { r[$1, $5] = $10; q[$1, $5] = $9; if (!($5 in seen)) { seen[$5] = 1; o[n++] = $5 } }
        END { for (i = 0; i < n; i++) { x = o[i]
            printf "| %s | %s | %s | %s | %s | %s | %s |\n", x, r["bbr-lt", x], r["bbr", x], r["cubic", x], q["bbr-lt", x], q["bbr", x], q["cubic", x] } }' "$b"
    echo
    echo "Share of the goodput against one CUBIC flow on a 2-BDP buffer (dumbbell,"
    echo "${dur2} s, over the second half):$(awk -F, '$2 != "cc1" && $3 == "cubic" { printf " %s %s %%", $2, $10 }' "$s")."
    echo "The bottleneck falling from 100 to 10 Mbit/s at 10 s (2-BDP buffer,"
    echo "CSV congestion-lt-drop.csv; settle = until the queue is back under one base"
    echo "RTT, p95 from 12 s on):"
    echo
    echo "| cc | settle s | queue p95 after ms | goodput after Mbit/s |"
    echo "|---|---|---|---|"
    awk -F, 'NR > 1 { printf "| %s | %s | %s | %s |\n", $1, $7, $8, $9 }' "$d"
    echo
    echo "Two flows of one controller, the second 0-5 s late (dumbbell, both 50 ms;"
    echo "\`bench_cc two CC CC 100 50 50 BUF 30 $seed 0 LATE 20\`): the smaller flow's share"
    echo "of the goodput over 20-30 s, % (target: at least 40, i.e. within 20 % of"
    echo "equal shares):"
    echo
    echo "| cc | buffer (BDP) | 0 s late | 1 s | 2 s | 3 s | 5 s | utilisation % (mean) |"
    echo "|---|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 && $2 == $3 { k = $2 FS $7; if (!(k in seen)) { seen[k] = 1; o[n++] = k }
            m = $10 < 50 ? $10 : 100 - $10; v[k, $1] = sprintf("%.1f", m); u[k] += $11; c[k]++ }
        END { for (i = 0; i < n; i++) { k = o[i]; split(k, p, FS); printf "| %s | %s |", p[1], p[2]
            split("0 1 2 3 5", L, " "); for (j = 1; j <= 5; j++) printf " %s |", v[k, L[j]]
            printf " %.1f |\n", u[k] / c[k] } }' "$s"
    echo
}

lt_section8() {
    local f=$out/congestion-lt-paths.csv
    [[ -f $f ]] || return 0
    echo "### bbr-lt on other paths (part 8)"
    echo
    echo "Part 7's random-loss rows for bbr-lt alone on paths the targets were not"
    echo "tuned on: \`bench_cc series bbr-lt RATE RTT LOSS 2 $dur7 SEED 10\` (2-BDP"
    echo "buffers), goodput over $((dur7 / 2))-$dur7 s in Mbit/s and as % of the"
    echo "bottleneck's rate (the 100 Mbit/s x 50 ms targets, 90/90/85/75 Mbit/s at"
    echo "2/3/5/10 %, are 90/90/85/75 % of it). CSV: congestion-lt-paths.csv."
    echo
    echo "| path | seed | 2 % | 3 % | 5 % | 10 % |"
    echo "|---|---|---|---|---|---|"
    lt_half_means "$f" 5 | awk -F, '{ k = $3 " Mbit/s x " $4 " ms" FS $1; if (!(k in seen)) { seen[k] = 1; o[n++] = k }
            v[k, $5] = sprintf("%s (%.0f %%)", $6, 100 * $6 / $3) }
        END { for (i = 0; i < n; i++) { k = o[i]; split(k, p, FS); printf "| %s | %s |", p[1], p[2]
            split("2 3 5 10", L, " "); for (j = 1; j <= 4; j++) printf " %s |", v[k, L[j]]
            printf "\n" } }'
    echo
    lt_section8b
}

lt_section8b() {
    local s=$out/congestion-lt-paths-share.csv c=$out/congestion-lt-paths-cubic.csv
    [[ -f $s && -f $c ]] || return 0
    echo "Item 2's fairness clauses on paths the suite does not run. Two bbr-lt"
    echo "flows through one bottleneck (\`bench_cc two bbr-lt bbr-lt RATE RTT RTT BUF 30"
    echo "$seed 0 LATE 20\`, dumbbell, CSV congestion-lt-paths-share.csv): the smaller"
    echo "flow's share of the goodput over 20-30 s, % (target: at least 40), and"
    echo "the link's use, % of the bottleneck:"
    echo
    echo "| path | buffer (BDP) | 0 s late | 1.5 s | 2 s | 3.5 s | 5 s | utilisation % (least) |"
    echo "|---|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 { k = $4 " Mbit/s x " $5 " ms" FS $7; if (!(k in seen)) { seen[k] = 1; o[n++] = k; u[k] = 1000 }
            m = $10 < 50 ? $10 : 100 - $10; v[k, $1] = sprintf("%.1f", m); if ($11 < u[k]) u[k] = $11 }
        END { for (i = 0; i < n; i++) { k = o[i]; split(k, p, FS); printf "| %s | %s |", p[1], p[2]
            split("0 1.5 2 3.5 5", L, " "); for (j = 1; j <= 5; j++) printf " %s |", v[k, L[j]]
            printf " %.1f |\n", u[k] } }' "$s"
    echo
    echo "At 3 % random loss (2-BDP buffer), CUBIC alone (\`bench_cc series cubic RATE"
    echo "RTT 3 2 40 SEED 10\`, mean of the 10-40 s rows) and beside one bbr-lt flow"
    echo "(\`bench_cc two bbr-lt cubic RATE RTT RTT 2 40 SEED 3 0 10\`, dumbbell, 10-40 s),"
    echo "Mbit/s (target: CUBIC beside at least CUBIC alone, bbr-lt not starved;"
    echo "CSV congestion-lt-paths-cubic.csv):"
    echo
    echo "| path | seed | cubic alone | cubic beside bbr-lt | ratio | bbr-lt |"
    echo "|---|---|---|---|---|---|"
    awk -F, 'NR > 1 { printf "| %s Mbit/s x %s ms | %s | %.2f | %.2f | %.2f | %.1f |\n", $2, $3, $1, $4, $5, ($4 > 0 ? $5 / $4 : 0), $6 }' "$c"
    echo
}
