#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ACK-frequency experiments (docs/experiments/ack-frequency.md).
# usage: bench/ackfreq.sh [BUILD_DIR] [OUT_DIR] [--no-loopback | --loopback-only | --bbr]
#   Every table of the page's current results is written by this script into
#   OUT_DIR/ack-frequency.md, each between "<!-- ackfreq.sh NAME begin" and
#   "<!-- ackfreq.sh NAME end -->" (NAME = lossy, asym, asym-sweep,
#   asym-overhead, reorder, loopback, bbr), with the commit, the command, the
#   seeds and the date; the prose around the markers is left alone. NO_DOC=1
#   writes only the CSVs and PNGs.
#   2-4: simulator scenarios bench/scenarios/ackfreq-{lossy,asym,reorder}.ini
#        run with ack_frequency = off (RFC 9000), a fixed threshold and auto,
#        every mode on the same seeds (paired: same loss pattern); tables give
#        the mean +- standard error of goodput and of the per-seed goodput
#        ratio to `off`. CSV + gnuplot PNGs in OUT_DIR.
#        SEEDS (default 10), LOSSY_S (120), REORDER_S (30), ASYM_S (10) set
#        seeds and simulated seconds. Exp. 3 also sweeps the 1 Mbit/s ACK
#        direction's queue (time- and packet-limited); that scenario has no
#        random element, so one seed. ASYM_OVERHEADS (default "0 48") repeats
#        the sweep with that many bytes of per-packet header instead of the
#        scenario's 28 (IPv4/UDP): ackfreq-asym-sweep-overhead<N>.{csv,png}.
#        LOSSY_MODES / ASYM_MODES / REORDER_MODES override the modes (the
#        first is the baseline), e.g. LOSSY_MODES="off 10 auto auto-threshold"
#   1:   loopback `quack perf` (no protection), threshold 1 vs 10 asked by the
#        client or by the server, and auto: ROUNDS rounds (default 7) of the
#        five configurations in turn, DURATION s each (default 5). The table
#        gives medians over the rounds and the median of the per-round ratio
#        to the same round's `off` (the machine is shared: only same-round
#        figures compare); OUT_DIR/ackfreq-loopback.{csv,png}.
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
page=$out/ack-frequency.md
head=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
# A run from a tree whose code differs from the commit says so.
if [[ -n $(git -C "$here/.." status --porcelain -- src include apps bench CMakeLists.txt 2>/dev/null) ]]; then
    head="$head + uncommitted changes"
fi
today=$(date -u +%Y-%m-%d)
# The command as run, with every setting that moves a figure, and the
# niceness it ran at.
nice_txt=""
[[ $(nice) == 0 ]] || nice_txt="nice -n $(nice) "
cmd="SEEDS=$seeds LOSSY_S=${LOSSY_S:-120} REORDER_S=${REORDER_S:-30} ASYM_S=${ASYM_S:-10}"
cmd+=" LOSSY_MODES=\"${LOSSY_MODES:-off 10 auto}\" ASYM_MODES=\"${ASYM_MODES:-off 10 auto}\""
cmd+=" REORDER_MODES=\"${REORDER_MODES:-off 10,25000,1 auto}\" ASYM_OVERHEADS=\"${ASYM_OVERHEADS-0 48}\""
cmd+=" DURATION=${DURATION:-5} ROUNDS=${ROUNDS:-7} ${nice_txt}bench/ackfreq.sh $build $out${3:+ $3}"
reduced=""
if [[ $seeds != 10 || ${LOSSY_S:-120} != 120 || ${REORDER_S:-30} != 30 || ${ASYM_S:-10} != 10 ]]; then
    reduced="**Reduced run, not the documented one** (10 seeds; 120 s, 10 s, 30 s): "
fi
written() { # written T0 -> the provenance sentence of a generated section
    echo "${reduced}Written by \`$cmd\` at \`$head\` ($today; $(($(date +%s) - $1)) s for this part on this machine)."
}

# page_section NAME FILE: replace the page's NAME section (markers included)
# by FILE; a page without those markers is an error (bbr appends instead).
replace_py='
import re, sys
path, name, sec = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().rstrip("\n")
text = open(path).read()
pat = re.compile(r"<!-- ackfreq\.sh " + re.escape(name) + r" begin.*?<!-- ackfreq\.sh "
                 + re.escape(name) + r" end -->", re.S)
if pat.search(text):
    text = pat.sub(lambda m: sec, text)
elif name == "bbr":
    text = text.rstrip("\n") + "\n\n" + sec + "\n"
else:
    sys.exit("ackfreq.sh: no \"" + name + "\" markers in " + path)
open(path, "w").write(text)
'
page_section() {
    [[ ${NO_DOC:-0} == 1 ]] && return 0
    python3 -c "$replace_py" "$page" "$1" "$2"
}
begin_marker() { echo "<!-- ackfreq.sh $1 begin: written by bench/ackfreq.sh, do not edit by hand -->"; }
end_marker() { echo "<!-- ackfreq.sh $1 end -->"; }

field() { # field NAME LINE -> value of NAME=... in the flow row
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2" | tr -d '%'
}

# sim_row INI MODE SEED DURATION [LINK_FORWARD_LIMIT] -> the flow's result row
# SIM_CC / SIM_OVERHEAD override the scenario's cc / every link's overhead.
sim_row() {
    local q=${5:-}
    awk -v q="$q" '/^\[/ { s = ($0 == "[link.forward]") }
                   { if (s && q != "" && $1 ~ /^limit/) print q; else print }' "$1" |
        sed -e "s/^ack_frequency = .*/ack_frequency = $2/" \
            -e "s/^duration = .*/duration = $4/" \
            -e "${SIM_CC:+s/^cc = .*/cc = $SIM_CC/}" \
            -e "${SIM_OVERHEAD:+s/^overhead = .*/overhead = $SIM_OVERHEAD/}" >"$tmp/s.ini"
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
                      t[m] += $10; gp[m, $2] = $3 }
             function se(sum, sq, cnt,   mu) { if (cnt < 2) return 0; mu = sum / cnt;
                      return sqrt((sq - cnt * mu * mu) / (cnt - 1) / cnt) }
             END { for (m in o) ord[o[m]] = m;
                   printf "| mode | goodput Mbit/s | goodput / off (paired) | ACKs per data packet | immediate ACKs | spurious retx | retx | srtt ms |\n|---|---|---|---|---|---|---|---|\n";
                   for (j = 1; j <= k; j++) { m = ord[j]; rs = 0; rr = 0; c = 0;
                     for (key in gp) { split(key, kk, SUBSEP); if (kk[1] != m || base[kk[2]] == 0) continue;
                                       x = gp[key] / base[kk[2]]; rs += x; rr += x * x; c++ }
                     printf "| %s | %.2f ± %.2f | %.4f ± %.4f | %.4f | %.0f | %.1f | %.1f | %.1f |\n", m, g[m]/n[m], se(g[m], gg[m], n[m]),
                            rs / c, se(rs, rr, c), a[m]/n[m], i[m]/n[m], s[m]/n[m], r[m]/n[m], t[m]/n[m] } }' \
        "$csv" | tee "$tmp/$name.md"
    # One sentence per mode other than the baseline: the headline figures,
    # the per-seed range of the ratio, immediate ACKs against the baseline.
    awk -F, 'NR > 1 { m = $1; if (!(m in o)) { o[m] = ++k; ord[k] = m } if (o[m] == 1) base[$2] = $3;
                      n[m]++; a[m] += $4; i[m] += $5; gp[m, $2] = $3 }
             END { b = ord[1]
                   for (j = 2; j <= k; j++) { m = ord[j]; rs = 0; c = 0; lo = 1e9; hi = -1e9
                     for (key in gp) { split(key, kk, SUBSEP); if (kk[1] != m || base[kk[2]] == 0) continue
                                       x = gp[key] / base[kk[2]]; rs += x; c++; if (x < lo) lo = x; if (x > hi) hi = x }
                     printf "* `%s`: goodput / `%s` %.4f", m, b, rs / c
                     if (c > 1) printf " (per seed %.4f–%.4f)", lo, hi
                     printf ", %.3f ACK frames per data packet (`%s` %.3f), %.0f immediate ACKs (`%s` %.0f: %.1f× fewer).\n",
                            a[m] / n[m], b, a[b] / n[b], i[m] / n[m], b, i[b] / n[b], i[m] ? i[b] / i[m] : 0 } }' \
        "$csv" >"$tmp/$name.sum"
    awk -F, 'NR > 1 { n[$1]++; g[$1] += $3; a[$1] += $4; if (!($1 in o)) o[$1] = ++k }
             END { for (m in o) ord[o[m]] = m;
                   for (j = 1; j <= k; j++) { m = ord[j]; printf "%s %f %f\n", m, g[m]/n[m], a[m]/n[m] } }' \
        "$csv" >"$tmp/$name.dat"
    gnuplot -e "dat='$tmp/$name.dat'; png='$out/ackfreq-$name.png'; title='$name (mean of $nseeds seeds x $dur)'" \
        "$here/plot/ackfreq.gp"
}

# sim_section NAME DURATION SEEDS T0 TEXT: the page section of one sim_exp
sim_section() {
    {
        begin_marker "$1"
        echo "$(written "$4") $5 Seeds 1..$3 ($2 simulated each),"
        echo "every mode on the same seeds; CSV \`ackfreq-$1.csv\`."
        echo
        cat "$tmp/$1.md"
        echo
        echo "![$1](ackfreq-$1.png)"
        echo
        cat "$tmp/$1.sum"
        end_marker "$1"
    } >"$tmp/$1.sec"
    page_section "$1" "$tmp/$1.sec"
}

# Exp. 3: the ACK direction's queue. Linux txqueuelen is 1000 packets; DSL and
# cable modems buffer hundreds of ms to seconds; short queues for contrast.
# asym_sweep [OVERHEAD]: with OVERHEAD, every link charges that header size
# (the scenario's own is 28) and the files get an -overhead<N> suffix.
asym_queues=("limit_time = 25ms" "limit_time = 50ms" "limit_time = 100ms" "limit_time = 250ms"
    "limit_time = 1s" "limit_pkts = 50" "limit_pkts = 100" "limit_pkts = 300" "limit_pkts = 1000")
asym_sweep() {
    local ovh=${1:-} sfx=${1:+-overhead$1}
    local csv=$out/ackfreq-asym-sweep$sfx.csv dur=${ASYM_S:-10}s
    echo "queue,off_mbps,off_srtt_ms,fixed10_mbps,auto_mbps,auto_srtt_ms,auto_over_off" >"$csv"
    echo "| ACK-direction queue | off Mbit/s (srtt ms) | 10 Mbit/s | auto Mbit/s (srtt ms) | auto / off |"
    echo "|---|---|---|---|---|"
    for q in "${asym_queues[@]}"; do
        local r_off r_10 r_auto g_off g_10 g_auto
        r_off=$(SIM_OVERHEAD=$ovh sim_row "$here/scenarios/ackfreq-asym.ini" off 1 "$dur" "$q")
        r_10=$(SIM_OVERHEAD=$ovh sim_row "$here/scenarios/ackfreq-asym.ini" 10 1 "$dur" "$q")
        r_auto=$(SIM_OVERHEAD=$ovh sim_row "$here/scenarios/ackfreq-asym.ini" auto 1 "$dur" "$q")
        g_off=$(awk '{sub("M$", "", $5); print $5}' <<<"$r_off")
        g_10=$(awk '{sub("M$", "", $5); print $5}' <<<"$r_10")
        g_auto=$(awk '{sub("M$", "", $5); print $5}' <<<"$r_auto")
        local label=${q#limit_time = }
        label=${label/limit_pkts = /}
        [[ $q == limit_pkts* ]] && label="$label pkts"
        echo "$label,$g_off,$(field srtt_ms "$r_off"),$g_10,$g_auto,$(field srtt_ms "$r_auto"),$(awk -v a="$g_auto" -v b="$g_off" 'BEGIN{printf "%.2f", a / b}')" >>"$csv"
        echo "| $label | $g_off ($(field srtt_ms "$r_off")) | $g_10 | $g_auto ($(field srtt_ms "$r_auto")) | $(awk -v a="$g_auto" -v b="$g_off" 'BEGIN{printf "%.2f", a / b}') |"
    done
    gnuplot -e "csv='$csv'; png='$out/ackfreq-asym-sweep$sfx.png'; title='exp. 3: goodput vs ACK-direction queue ($dur${ovh:+, overhead $ovh B})'" "$here/plot/ackfreq-asym-sweep.gp"
}
asym_sweep_sections() { # the asym-sweep and asym-overhead sections
    local t0 ovh
    t0=$(date +%s)
    asym_sweep | tee "$tmp/sweep.md"
    {
        begin_marker asym-sweep
        echo "$(written "$t0") One seed (no random"
        echo "element), ${ASYM_S:-10} s simulated per run, overhead 28 (IPv4/UDP); srtt at the end of"
        echo "the run; CSV \`ackfreq-asym-sweep.csv\`."
        echo
        cat "$tmp/sweep.md"
        echo
        echo "![asym sweep](ackfreq-asym-sweep.png)"
        echo
        awk -F, 'NR > 1 { printf "%s%s %.2f×", (NR > 2 ? ", " : "* auto / off by queue: "), $1, $7 }
                 NR > 1 && $7 >= 2 { two = two (two ? ", " : "") $1 }
                 END { printf ".\n* auto ≥ 2× off at: %s.\n", two ? two : "no queue" }' "$out/ackfreq-asym-sweep.csv"
        end_marker asym-sweep
    } >"$tmp/sweep.sec"
    page_section asym-sweep "$tmp/sweep.sec"
    # shellcheck disable=SC2086
    set -- ${ASYM_OVERHEADS-0 48}
    [[ $# -gt 0 ]] || return 0
    t0=$(date +%s)
    for ovh in "$@"; do
        echo "## 3: sweep with overhead $ovh"
        asym_sweep "$ovh"
    done
    {
        begin_marker asym-overhead
        echo "$(written "$t0") The same sweep"
        echo "with every link charging a different per-packet header, one seed, ${ASYM_S:-10} s"
        echo "simulated per run; CSVs \`ackfreq-asym-sweep-overhead<N>.csv\`."
        echo
        local hdr="| ACK-direction queue |" sep="|---|" f
        for ovh in "$@"; do
            hdr+=" overhead $ovh: off | auto | auto / off |"
            sep+="---|---|---|"
        done
        echo "$hdr"
        echo "$sep"
        local files=()
        for ovh in "$@"; do files+=("$out/ackfreq-asym-sweep-overhead$ovh.csv"); done
        awk -F, 'FNR == 1 { f++; next } { q[FNR] = $1; row[FNR] = row[FNR] sprintf(" %s | %s | %s |", $2, $5, $7); last = FNR }
                 END { for (j = 2; j <= last; j++) printf "| %s |%s\n", q[j], row[j] }' "${files[@]}"
        echo
        for f in "${files[@]}"; do
            awk -F, -v f="${f##*/}" 'NR > 1 && $1 == "1000 pkts" { printf "* %s: at a 1000-packet queue off %s, auto %s Mbit/s, auto / off %s×.\n", f, $2, $5, $7 }' "$f"
        done
        end_marker asym-overhead
    } >"$tmp/ovh.sec"
    page_section asym-overhead "$tmp/ovh.sec"
}

# --bbr: exp. 2 and 4 again with each scenario's controller and
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
    local nseeds=${SEEDS:-3} ls=${LOSSY_S:-10}s rs=${REORDER_S:-10}s t0
    t0=$(date +%s)
    # shellcheck disable=SC2086
    bbr_exp lossy "$ls" "$nseeds" ${LOSSY_MODES:-off 10 auto} >"$tmp/bbr-lossy.md"
    # shellcheck disable=SC2086
    bbr_exp reorder "$rs" "$nseeds" ${REORDER_MODES:-off 10,25000,1 auto} >"$tmp/bbr-reorder.md"
    {
        echo "<!-- ackfreq.sh bbr begin: written by bench/ackfreq.sh --bbr, do not edit by hand -->"
        echo "## Exp. 2 and 4 with BBR"
        echo
        echo "BBR (draft-ietf-ccwg-bbr, docs/cc.md) sets its rate from delivery-rate"
        echo "samples (draft §4.1): each ACK yields delivered / max(send interval, ACK"
        echo "interval). A thinned ACK stream gives fewer, larger samples, and an ACK"
        echo "delayed by the receiver stretches the ACK interval; the experiments below"
        echo "rerun exp. 2 and 4 with each scenario's own controller and with \`cc = bbr\`,"
        echo "same modes, same seeds 1..$nseeds (paired), short runs: $ls (exp. 2) and $rs"
        echo "(exp. 4) of simulated time, so Startup weighs more than in the long runs"
        echo "above. \"goodput / off\" is the per-seed ratio to the same controller's RFC"
        echo "9000 run. Written by \`SEEDS=$nseeds LOSSY_S=${ls%s} REORDER_S=${rs%s} ${nice_txt}bench/ackfreq.sh"
        echo "$build $out --bbr\` at \`$head\` ($today, $(($(date +%s) - t0)) s on this machine)."
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
    page_section bbr "$tmp/bbr-section.md"
    cat "$tmp/bbr-section.md"
}
if [[ ${3:-} == --bbr ]]; then
    bbr_section
    exit 0
fi

if [[ $sims == 1 ]]; then
    echo "## 2: 1 Gbit/s, 40 ms RTT, 0.1% loss"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    sim_exp lossy "${LOSSY_S:-120}s" "$seeds" ${LOSSY_MODES:-off 10 auto}
    sim_section lossy "${LOSSY_S:-120}s" "$seeds" "$t0" "Scenario \`bench/scenarios/ackfreq-lossy.ini\`."
    echo "## 3: 100 Mbit/s down, 1 Mbit/s up, 30 ms RTT"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    sim_exp asym "${ASYM_S:-10}s" 1 ${ASYM_MODES:-off 10 auto}
    sim_section asym "${ASYM_S:-10}s" 1 "$t0" "Scenario \`bench/scenarios/ackfreq-asym.ini\` (no random element: one seed)."
    asym_sweep_sections
    echo "## 4: 5% reordering"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    sim_exp reorder "${REORDER_S:-30}s" "$seeds" ${REORDER_MODES:-off 10,25000,1 auto}
    sim_section reorder "${REORDER_S:-30}s" "$seeds" "$t0" "Scenario \`bench/scenarios/ackfreq-reorder.ini\`; mode \`10/25000/1\` is \`10,25000,1\`."
fi

[[ $loopback == 1 ]] || exit 0
echo "## 1: loopback quack perf (no protection)"
t0=$(date +%s)
port=$((20000 + RANDOM % 20000))
rounds=${ROUNDS:-7}
lcsv=$out/ackfreq-loopback.csv
echo "round,config,down_mbps,up_mbps,client_acks_per_pkt_sent,client_acks_per_pkt_received,client_cpu_s" >"$lcsv"
perf_run() { # perf_run ROUND SERVER_AF CLIENT_AF LABEL -> one CSV row
    "$quack" perf server --listen 127.0.0.1:$port --no-protection --ack-frequency "$2" --stats \
        --quiet >"$tmp/srv.out" 2>"$tmp/srv.err" &
    local spid=$!
    sleep 0.5
    /usr/bin/time -f "%U %S" -o "$tmp/cli.time" "$quack" perf client --connect 127.0.0.1:$port \
        --insecure --no-protection --duration "${DURATION:-5}" --ack-frequency "$3" --stats --quiet \
        >"$tmp/cli.out" 2>"$tmp/cli.err" || true
    sleep 0.5
    kill -INT $spid 2>/dev/null || true
    wait $spid 2>/dev/null || true
    local cpu_c; cpu_c=$(awk '{printf "%.2f", $1 + $2}' "$tmp/cli.time")
    # Throughput from the "transferred:" line; client stats: pkts
    # received/sent, ack frames sent/received.
    awk -v cpu="$cpu_c" -v lab="$4" -v r="$1" '/^transferred:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^down/) d = $(i-1); if ($(i+1) ~ /^up/) u = $(i-1) } }
             /^stats: pkts sent/ {ps=$4; pr=$6} /^stats: ack frames sent/ {as=$5; ar=$7}
             END { printf "%s,%s,%s,%s,%.4f,%.4f,%s\n", r, lab, d, u, pr ? as/pr : 0, ps ? ar/ps : 0, cpu }' \
        "$tmp/cli.out" | tee -a "$lcsv"
}
for r in $(seq 1 "$rounds"); do
    perf_run "$r" off off off
    perf_run "$r" 1,25000 1,25000 1/both
    perf_run "$r" off 10,25000 10/client
    perf_run "$r" 10,25000 off 10/server
    perf_run "$r" auto auto auto
done
# Per configuration: medians over rounds; the download ratio to `off` is
# taken per round, then the median.
loopback_py='
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
names = {"off": "off on both sides (RFC 9000)", "1/both": "threshold 1 asked by both",
         "10/client": "threshold 10 asked by the client", "10/server": "threshold 10 asked by the server",
         "auto": "auto on both (default)"}
order = list(dict.fromkeys(r["config"] for r in rows))
base = {r["round"]: float(r["down_mbps"] or 0) for r in rows if r["config"] == "off"}
med = lambda k, c: st.median(float(r[k] or 0) for r in rows if r["config"] == c)
print("| configuration | download Mbit/s | download / off (same round) | upload Mbit/s "
      "| client ACK frames per packet received | per packet sent (ACKs received) | client CPU s |")
print("|---|---|---|---|---|---|---|")
dat = open(sys.argv[2], "w")
for c in order:
    ratios = [float(r["down_mbps"] or 0) / base[r["round"]] for r in rows
              if r["config"] == c and base.get(r["round"])]
    lo, hi = (min(ratios), max(ratios)) if ratios else (0, 0)
    print("| %s | %.0f | %.3f (%.3f–%.3f) | %.0f | %.4f | %.4f | %.2f |" % (
        names.get(c, c), med("down_mbps", c), st.median(ratios) if ratios else 0, lo, hi,
        med("up_mbps", c), med("client_acks_per_pkt_sent", c), med("client_acks_per_pkt_received", c),
        med("client_cpu_s", c)))
    dat.write("%s %f %f\n" % (c, med("down_mbps", c), med("client_acks_per_pkt_sent", c)))
'
python3 -c "$loopback_py" "$lcsv" "$tmp/loopback.dat" | tee "$tmp/loopback.md"
gnuplot -e "dat='$tmp/loopback.dat'; png='$out/ackfreq-loopback.png'; title='loopback quack perf, median of $rounds rounds x ${DURATION:-5} s (download Mbit/s; client ACK frames per packet received)'" \
    "$here/plot/ackfreq.gp"
{
    begin_marker loopback
    echo "$(written "$t0") $rounds rounds of the five"
    echo "configurations in turn, ${DURATION:-5} s each, on the shared build machine; medians over the"
    echo "rounds, \"download / off\" = median (min–max) of the per-round ratio to the"
    echo "same round's \`off\`; CSV \`ackfreq-loopback.csv\` (one row per run)."
    echo
    cat "$tmp/loopback.md"
    echo
    echo "![loopback](ackfreq-loopback.png)"
    end_marker loopback
} >"$tmp/loopback.sec"
page_section loopback "$tmp/loopback.sec"
