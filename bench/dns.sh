#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The DNS carrier's poll-policy table (seed 004): a 10 MiB download
# through `quack tunnel --carrier dns` at 100 ms RTT (quack netem), "direct"
# (client -> netem -> tunnel server) and through Debian's unbound (client ->
# netem -> unbound -> tunnel server), for 0/1/2 polls per data answer with
# ACK-as-poll on and off, burst caps, --max-qname-len 101 and unbound with
# qname minimisation on; and Debian's iodine through the same unbound and
# RTT as the baseline (bench/dns_iodine.bash: network namespaces). Writes
# docs/experiments/dns.csv, dns.md (this script's table) and dns.png.
# Usage: bench/dns.sh [BUILD_DIR (default build/release)] [REPS (default 2)]
#   QK_DNS_BENCH_MAIN_REPS (default 5): runs of the default row through unbound
#   (2 polls, ACK-as-poll on, cap 16, 253), whose median is the headline;
#   every run records the 1-minute load average (the machine is shared).
#   QK_DNS_BENCH_ONLY=iodine: keep the quack rows of dns.csv, redo iodine's
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build/release}
REPS=${2:-2}
MAIN_REPS=${QK_DNS_BENCH_MAIN_REPS:-5}
SIZE=$((10 * 1048576))
CAP_S=${QK_DNS_BENCH_CAP_S:-40} # give up on a run after this long (the seed's "~")
OUT=$SRC/docs/experiments
source "$SRC/tests/interop/dns/rig.bash"
source "$SRC/bench/dns_iodine.bash"
ONLY=${QK_DNS_BENCH_ONLY:-}
for tool in unbound gnuplot ss; do
    command -v $tool >/dev/null || { echo "bench/dns.sh: $tool missing (scripts/deps.sh)" >&2; exit 1; }
done
trap rig_cleanup EXIT
rig_init "$BUILD"
CSV=$OUT/dns.csv
if [ "$ONLY" != iodine ]; then
rig_server || exit 1
rig_unbound "$UPORT" no || exit 1
rig_unbound "$UPORT2" yes || exit 1
rig_netem "$NPORT" "$UPORT" 100 || exit 1                    # -> unbound
rig_netem "$NPORT2" "$SPORT" 100 || exit 1             # -> tunnel server (direct)
rig_netem "$NPORT3" "$UPORT2" 100 || exit 1      # -> unbound, minimising

echo "path,polls,ack_as_poll,burst_cap,max_qname,rep,kib_s,complete,seconds,queries,answers_empty,load1" >"$CSV"

run() { # PATH_NAME RESOLVER_PORT POLLS ACK CAP QNAME [REPS]
    local name=$1 rport=$2 polls=$3 ack=$4 cap=$5 qn=$6 reps=${7:-$REPS}
    for rep in $(seq "$reps"); do
        rig_client "$rport" --polls "$polls" --ack-as-poll "$ack" --burst-cap "$cap" \
            --max-qname-len "$qn" || return 1
        local res
        res=$(python3 "$RIG_DIR/peer.py" get "$CPORT" "$SIZE" "$rep" "$CAP_S")
        local load
        load=$(cut -d' ' -f1 /proc/loadavg)
        rig_stop_client
        local kind bytes secs complete=1
        read -r kind bytes secs <<<"$res"
        if [ "$kind" = ok ]; then bytes=$SIZE; else complete=0; fi
        local kib q e
        kib=$(python3 -c "print(round($bytes / 1024 / $secs, 1))")
        q=$(sed -n 's/.* \([0-9]*\) queries (.*/\1/p' "$WORK/client.err" | tail -1)
        e=$(sed -n 's/.* \([0-9]*\) empty, .*/\1/p' "$WORK/client.err" | tail -1)
        echo "$name,$polls,$ack,$cap,$qn,$rep,$kib,$complete,$secs,${q:-0},${e:-0},$load" | tee -a "$CSV"
        [ "$polls" = 0 ] && break # one run: it is slow by construction
    done
}

for path in direct unbound; do
    rport=$NPORT
    [ $path = direct ] && rport=$NPORT2
    for polls in 2 1 0; do
        for ack in on off; do
            reps=$REPS
            [ $path = unbound ] && [ $polls = 2 ] && [ $ack = on ] && reps=$MAIN_REPS
            run $path $rport $polls $ack 16 253 "$reps"
        done
    done
    for cap in 4 64; do run $path $rport 2 on $cap 253; done
    run $path $rport 2 on 16 101
done
run unbound-minimise "$NPORT3" 2 on 16 253
rig_cleanup
PIDS=()
fi

# iodine through unbound, same RTT and size (one run: it is slow).
grep -v '^iodine' "$CSV" >"$CSV.tmp" && mv "$CSV.tmp" "$CSV"
IODINE_NOTE=""
res=$(iodine_row "$SIZE" "$CAP_S" 1)
read -r kind bytes secs <<<"$res"
case "$kind" in
ok | partial)
    complete=0
    [ "$kind" = ok ] && { complete=1; bytes=$SIZE; }
    kib=$(python3 -c "print(round($bytes / 1024 / $secs, 1))")
    echo "iodine-unbound,-,-,-,-,1,$kib,$complete,$secs,,,$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$CSV"
    ;;
*) IODINE_NOTE="iodine baseline: skipped (${res#skip })." ;;
esac

python3 - "$CSV" "$OUT" "$REPS" "$CAP_S" "$IODINE_NOTE" "$MAIN_REPS" <<'PY'
import csv, sys, collections, datetime, subprocess
path, out, reps, cap, iodine_note, main_reps = sys.argv[1:7]
rows = list(csv.DictReader(open(path)))
key = lambda r: (r["path"], r["polls"], r["ack_as_poll"], r["burst_cap"], r["max_qname"])
groups = collections.OrderedDict()
for r in rows:
    groups.setdefault(key(r), []).append(r)
commit = subprocess.run(["git", "-C", out, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
L = []
L.append("# DNS carrier: the poll-policy table (written by bench/dns.sh)\n")
L.append(f"Measured {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC at commit {commit} by `bench/dns.sh` "
         f"({reps} runs per row, {main_reps} for the default row through unbound, one for 0 polls). "
         f"10 MiB download through `quack tunnel --carrier dns` "
         f"with 100 ms RTT added by `quack netem` between the tunnel client and the resolver "
         f"(\"direct\": the netem relay forwards straight to the tunnel server). KiB/s over the "
         f"download (TCP connect to last byte; the QUIC connection was up before), each run's and "
         f"their median. \"~\" marks a run "
         f"stopped after {cap} s: its rate is what arrived by then. Loopback on a shared 2-core machine "
         f"(other jobs running: \"load\" is the 1-minute load average at the end of each run, "
         f"min-max over the row): expect +-30 % between runs. Queries and empty answers: the median run's.\n")
L.append("| resolver | polls/answer | ACK-as-poll | burst cap | max QNAME | KiB/s median | runs (KiB/s) | load | queries | empty answers |")
L.append("|---|---|---|---|---|---|---|---|---|---|")
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
def loads(g):
    v = [float(r["load1"]) for r in g if r.get("load1")]
    return f"{min(v):.1f}-{max(v):.1f}" if v else ""
for k, g in groups.items():
    rates = " / ".join(("~" if r["complete"] != "1" else "") + r["kib_s"] for r in g)
    med = median([float(r["kib_s"]) for r in g])
    mr = sorted(g, key=lambda r: float(r["kib_s"]))[(len(g) - 1) // 2]
    partial = "~" if mr["complete"] != "1" else ""
    L.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {partial}{med:.1f} | {rates} | {loads(g)} | {mr['queries']} | {mr['answers_empty']} |")
main = groups.get(("unbound", "2", "on", "16", "253"), [])
L.append("")
if main:
    med = median([float(r["kib_s"]) for r in main])
    done = sum(r["complete"] == "1" for r in main)
    verdict = "met" if med * 1024 >= 1e6 and done == len(main) else "NOT met"
    L.append(f"Through unbound with the defaults (2 polls per answer, ACK-as-poll, burst cap 16): median "
             f"{med:.0f} KiB/s ({med * 1024 / 1e6:.2f} MB/s) over {len(main)} runs ({done} complete), "
             f"load average {loads(main)}: target >= 1 MB/s {verdict} "
             f"(the seed's dnstt: 150-187 KiB/s direct, slipstream ~400 KB/s).\n")
io = [r for r in rows if r["path"].startswith("iodine")]
if io:
    r = io[0]
    L.append(f"iodine baseline (Debian's iodine 0.7, IP over DNS, autodetected: NULL queries, "
             f"Base128 up, raw down, lazy mode, EDNS0; same unbound, same 100 ms RTT, its ends in two "
             f"network namespaces joined by a veth pair, bench/dns_iodine.bash): "
             f"{'' if r['complete'] == '1' else '~'}{r['kib_s']} KiB/s"
             f"{'' if r['complete'] == '1' else ' (stopped after ' + cap + ' s)'}.\n")
else:
    L.append((iodine_note or "iodine baseline: not run.") + "\n")
L.append("![throughput vs polls per answer](dns.png)\n")
open(f"{out}/dns.md", "w").write("\n".join(L))
# gnuplot data: median KiB/s per (path, ack) over polls, burst cap 16, qname 253
with open(f"{out}/dns_plot.dat", "w") as f:
    for p in ("direct", "unbound"):
        for ack in ("on", "off"):
            f.write(f"# {p} ack-as-poll {ack}\n")
            for polls in ("0", "1", "2"):
                g = groups.get((p, polls, ack, "16", "253"), [])
                if g:
                    f.write(f"{polls} {median([float(r['kib_s']) for r in g]):.1f}\n")
            f.write("\n\n")
PY
gnuplot <<GP
set terminal pngcairo size 800,500
set output "$OUT/dns.png"
set title "10 MiB over the DNS carrier, 100 ms RTT (bench/dns.sh)"
set xlabel "polls per answer that carried data"
set ylabel "KiB/s"
set xtics 0,1,2
set key top left
set logscale y
plot "$OUT/dns_plot.dat" index 0 with linespoints title "direct, ACK-as-poll on", \
     "" index 1 with linespoints title "direct, ACK-as-poll off", \
     "" index 2 with linespoints title "unbound, ACK-as-poll on", \
     "" index 3 with linespoints title "unbound, ACK-as-poll off"
GP
echo "wrote $OUT/dns.md, dns.csv, dns.png"
