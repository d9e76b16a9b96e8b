#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The DNS carrier when the resolver path loses packets: a 3 MiB download
# through `quack tunnel --carrier dns` via Debian's unbound, with `quack netem`
# in front of the resolver adding 100 ms each way, on a clean path and with
# 2 % random loss each way. The tunnel server (the sender of the download)
# runs with each congestion controller in turn: the default (bbr-lt), `bbr`
# (the draft) and `cubic`; runs alternate between the two paths. Writes
# docs/experiments/dns-loss.csv (every run) and the "lossy resolver path"
# section of docs/experiments/dns.md (between its markers).
# Usage: bench/dns_loss.sh [BUILD_DIR (build/release)] [REPS (3)]
#   QK_DNS_LOSS_CCS="default cubic bbr"  controllers to run (default: all three)
#   QK_DNS_LOSS_CAP_S=60                 stop a run after this long ("~" rows)
#   QK_DNS_LOSS_BASE=DIR                 also run the default with DIR/quack (a
#     build of another commit, both tunnel ends), rows "base" right after
#     the default's, and compare the two in the same run
#   QK_DNS_LOSS_BASE_REV=REV             the commit DIR was built from (label)
set -u
case "${1:-}" in -h | --help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build/release}
REPS=${2:-3}
CCS=${QK_DNS_LOSS_CCS:-default bbr cubic}
BASE=${QK_DNS_LOSS_BASE:-}
BASE_REV=${QK_DNS_LOSS_BASE_REV:-base}
if [ -n "$BASE" ]; then
    [ -x "$BASE/quack" ] || { echo "bench/dns_loss.sh: QK_DNS_LOSS_BASE=$BASE has no quack binary; build it there first" >&2; exit 1; }
    CCS=$(sed 's/\bdefault\b/default base/' <<<"$CCS")
fi
CAP_S=${QK_DNS_LOSS_CAP_S:-60}
SIZE=$((3 * 1048576))
OUT=$SRC/docs/experiments
source "$SRC/tests/interop/dns/rig.bash"
command -v unbound >/dev/null || { echo "bench/dns_loss.sh: unbound missing (scripts/deps.sh)" >&2; exit 1; }
[ -x "$BUILD/quack" ] || { echo "bench/dns_loss.sh: run 'make release' first ($BUILD/quack)" >&2; exit 1; }
trap rig_cleanup EXIT
rig_init "$BUILD"
rig_unbound "$UPORT" no || exit 1
relay() { # PORT EXTRA_ARGS...: netem in front of unbound, 100 ms each way
    local port=$1
    shift
    "$Q" netem --listen 127.0.0.1:"$port" --to 127.0.0.1:"$UPORT" --delay 100ms \
        --limit-pkts 10000 "$@" 2>"$WORK/netem-$port.err" &
    PIDS+=($!)
    rig_wait_udp "$port"
}
relay "$NPORT" || exit 1
relay "$NPORT2" --loss 2% || exit 1
CSV=$OUT/dns-loss.csv
rev=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "cc,path,rep,kib_s,complete,seconds,load1" >"$CSV"
n_total=$(($(wc -w <<<"$CCS") * REPS * 2))
n=0
QMAIN=$Q
for cc in $CCS; do
    ccargs=()
    Q=$QMAIN
    case $cc in
    default) ;;
    base) Q=$BASE/quack ;;
    *) ccargs=(--cc "$cc") ;;
    esac
    [ -n "${SERVER_PID:-}" ] && { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; }
    rig_server "${ccargs[@]}" || exit 1
    for rep in $(seq "$REPS"); do
        for path in clean loss2; do
            rport=$NPORT
            [ $path = loss2 ] && rport=$NPORT2
            rig_client "$rport" || exit 1
            res=$(python3 "$RIG_DIR/peer.py" get "$CPORT" "$SIZE" "$rep" "$CAP_S")
            load=$(cut -d' ' -f1 /proc/loadavg)
            rig_stop_client
            read -r kind a b <<<"$res"
            complete=0 bytes=0 secs=$CAP_S
            case $kind in
            ok) complete=1 bytes=$SIZE secs=$b ;;
            partial) bytes=$a secs=$b ;;
            esac
            kib=$(python3 -c "print(round($bytes / 1024 / max($secs, 0.001), 1))")
            n=$((n + 1))
            echo "[$n/$n_total] $cc $path run $rep: $kib KiB/s ($kind, ${secs} s, load $load)" >&2
            echo "$cc,$path,$rep,$kib,$complete,$secs,$load" >>"$CSV"
        done
    done
done

python3 - "$CSV" "$OUT/dns.md" "$rev" "$REPS" "$CAP_S" "$BASE_REV" <<'PY'
import csv, statistics, sys, time
path_csv, md, rev, reps, cap, base_rev = sys.argv[1:]
rows = list(csv.DictReader(open(path_csv)))
name = {"default": "bbr-lt (default)", "bbr": "bbr (draft)", "cubic": "cubic",
        "base": f"default at {base_rev}"}
L = ["<!-- dns_loss.sh begin: written by bench/dns_loss.sh, do not edit by hand -->",
     "## A lossy resolver path (`bench/dns_loss.sh`)", "",
     f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit {rev}: a 3 MiB "
     "download through `quack tunnel --carrier dns` via Debian's unbound, `quack netem` in front "
     "of the resolver adding 100 ms each way, clean or with 2 % random loss each way; the "
     "tunnel server (the download's sender) with each controller; "
     f"{reps} runs per row alternating between the paths, median KiB/s (\"~\": stopped after "
     f"{cap} s, the rate is what arrived by then). Loopback on a shared 2-core machine: load "
     "is the 1-minute load average after each run (min-max).", "",
     "| controller | path | KiB/s median | runs (KiB/s) | load |", "|---|---|---|---|---|"]
med = {}
for cc in dict.fromkeys(r["cc"] for r in rows):
    for p in ("clean", "loss2"):
        rr = [r for r in rows if r["cc"] == cc and r["path"] == p]
        if not rr:
            continue
        k = [float(r["kib_s"]) for r in rr]
        m = statistics.median(k)
        med[(cc, p)] = m
        runs = " / ".join(("" if r["complete"] == "1" else "~") + r["kib_s"] for r in rr)
        lo = min(float(r["load1"]) for r in rr)
        hi = max(float(r["load1"]) for r in rr)
        tilde = "" if all(r["complete"] == "1" for r in rr) else "~"
        L.append(f"| {name.get(cc, cc)} | {'clean' if p == 'clean' else '2 % loss'} | "
                 f"{tilde}{m:.1f} | {runs} | {lo:.1f}-{hi:.1f} |")
L.append("")
if ("default", "loss2") in med:
    v = med[("default", "loss2")]
    L.append(f"Target at 2 % loss (the default): >= 500 KiB/s: {v:.0f} KiB/s, "
             + ("**met**." if v >= 500 else "**not met**."))
for p, label in (("clean", "Clean path"), ("loss2", "At 2 % loss")):
    if ("default", p) in med and ("base", p) in med:
        d, b = med[("default", p)], med[("base", p)]
        L.append(f"{label}, the default against the default at {base_rev} (both tunnel ends) "
                 f"in the same run: {d:.0f} vs {b:.0f} KiB/s ({d / b:.2f}x): "
                 + ("no slower." if d >= 0.95 * b else "**slower**."))
if ("default", "clean") in med and ("cubic", "clean") in med:
    d, c = med[("default", "clean")], med[("cubic", "clean")]
    L.append(f"Clean path, the default against cubic (the carrier's default before bbr-lt) in the "
             f"same run: {d:.0f} vs {c:.0f} KiB/s ({d / c:.2f}x): "
             + ("no slower." if d >= 0.95 * c else "**slower**."))
L.append("<!-- dns_loss.sh end -->")
sec = "\n".join(L) + "\n"
text = open(md).read()
b, e = "<!-- dns_loss.sh begin", "<!-- dns_loss.sh end -->"
if b in text:
    i = text.index(b)
    j = text.index(e) + len(e) + 1
    text = text[:i] + sec + text[j:]
else:
    text = text.rstrip("\n") + "\n\n" + sec
open(md, "w").write(text)
print(sec)
PY
