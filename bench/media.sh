#!/usr/bin/env bash
# The media experiment (issue 20): bench/scenarios/media-wifi.ini (picoquic's
# mediatest_wifi link and suspension schedule) run in the simulator with the
# three media flows, as base (no bypass) / bypass (no cap) / bypass + bucket
# (1 Mbit/s, 2,560 B), then bypass + bucket with a bulk upload sharing the
# link. Per flow: frames, average / p99 / max delay and the floor: the
# delay a perfect sender would see on that schedule (one-way delay plus the
# wait until the suspension holding the frame ends), computed here from the
# ini's suspend_list. Writes docs/experiments/media.md, media-*.csv and the
# latency-over-time plot media-latency.png.
# usage: bench/media.sh [BUILD_DIR (build/release, else build/debug)] [--cc cubic]
set -euo pipefail
build=build/release
[ -x "$build/quack" ] || build=build/debug
cc=cubic
while [ $# -gt 0 ]; do
    case $1 in
    --cc) cc=$2; shift ;;
    *) build=$1 ;;
    esac
    shift
done
ini=bench/scenarios/media-wifi.ini
out=docs/experiments
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

run() { # name bypass bulk
    local name=$1 bypass=$2 bulk=$3 f="$tmp/$1.ini"
    sed -e "s/^bypass = .*/bypass = $bypass/" -e "s/^cc = .*/cc = $cc/" \
        -e "s|^duration = 10s|duration = 10s\nframes = $tmp/$name.frames.csv|" "$ini" >"$f"
    if [ "$bulk" = 1 ]; then
        printf '\n[flow.bulk]\ntype = quic\nfrom = a\nto = b\ndirection = upload\nduration = 10s\ncc = %s\nwindow = 8MiB\n' "$cc" >>"$f"
    fi
    "$build/quack" sim "$f" >"$tmp/$name.out"
    cp "$tmp/$name.frames.csv" "$out/media-$name.csv"
}
run base off 0
run bypass on 0
run bucket bucket 0
run bulk bucket 1

python3 - "$ini" "$tmp" "$out" "$cc" "$(git rev-parse --short HEAD)" <<'PY'
import sys, re, csv
ini, tmp, out, cc, rev = sys.argv[1:]
susp = []
for line in open(ini):
    if line.startswith("suspend_list"):
        for p in line.split('=', 1)[1].split(','):
            a, b = p.strip().split('-')
            susp.append((float(a[:-2]) / 1e3, float(b[:-2]) / 1e3))
susp = sorted(set(susp))
owd = 0.002
def floor(s):
    for a, b in susp:
        if a <= s < b:
            return b - s + owd
    return owd
longest = max(b - a for a, b in susp)
def stats(name):
    rows = {}
    for r in csv.DictReader(open(f"{tmp}/{name}.frames.csv")):
        rows.setdefault(r['flow'], []).append(r)
    res = {}
    for fl, rs in rows.items():
        d = sorted((float(r['recv_s']) - float(r['sent_s'])) * 1e3 for r in rs)
        fl_ = [floor(float(r['sent_s'])) * 1e3 for r in rs]
        res[fl] = dict(n=len(d), avg=sum(d) / len(d), p99=d[int((len(d) - 1) * .99)], max=d[-1],
                       floor=sum(fl_) / len(fl_), floor_max=max(fl_))
    return res
def sent(name):
    txt = open(f"{tmp}/{name}.out").read()
    m = re.search(r'^media .*?au (\d+)/(\d+).*?ld (\d+)/(\d+).*?hd (\d+)/(\d+).*?failed=(\d+)', txt, re.M)
    return m
S = {n: stats(n) for n in ('base', 'bypass', 'bucket', 'bulk')}
M = {n: sent(n) for n in S}
o = open(f"{out}/media.md", 'w')
w = o.write
w("# Urgent media over bad Wi-Fi: urgency, the capped CC bypass (issue 20)\n\n")
w(f"Written by `bench/media.sh` at {rev} (simulator, {cc}). Scenario: "
  "`bench/scenarios/media-wifi.ini`, picoquic's `mediatest_wifi` as of the seed "
  "(private-octopus/picoquic `picoquictest/mediatest.c` at commit "
  "fc034ac6516dbaafeec612417f0040cd45d7ec77): 50 Mbit/s, 2 ms one way, "
  f"{len(susp)} suspensions of both directions in the first 11 s, the longest "
  f"{longest*1e3:.0f} ms. Media 10 s: audio 32 B / 20 ms (urgency 2), LD video "
  "2,048 B at 30 fps with a 32,768 B I-frame every 100th (urgency 4), HD video "
  "6,144 B at 60 fps with a 65,536 B I-frame every 100th (urgency 6), each on its "
  "own stream; bypass limit 5 (audio and LD video). Delay = send -> frame fully "
  "read by the receiver. Floor = one-way delay + the wait until the suspension "
  "holding the frame ends (what a perfect sender would see).\n\n")
w("## The seed's table, quack (ms)\n\n| | base | bypass | bypass + bucket | floor |\n|---|---|---|---|---|\n")
for fl, lab in (('audio', 'Audio'), ('ld-video', 'LD video')):
    w(f"| {lab} latency average | " + " | ".join(f"{S[n][fl]['avg']:.1f}" for n in ('base', 'bypass', 'bucket')) + f" | {S['bucket'][fl]['floor']:.1f} |\n")
    w(f"| {lab} latency max | " + " | ".join(f"{S[n][fl]['max']:.1f}" for n in ('base', 'bypass', 'bucket')) + f" | {S['bucket'][fl]['floor_max']:.1f} |\n")
w("\npicoquic's figures in the seed (µs in the seed, here ms): audio average 42.8 / 42.6 / 42.2, "
  "max 240.6 / 237.9 / 237.9; LD video average 45.5 / 44.1 / 44.3, max 238.0.\n\n")
w("## Per flow (frames received/sent, delays in ms)\n\n| run | flow | frames | avg | p99 | max | floor avg | excess avg | path failed |\n|---|---|---|---|---|---|---|---|---|\n")
for n in S:
    m = M[n]
    for i, fl in enumerate(('audio', 'ld-video', 'hd-video')):
        s = S[n].get(fl)
        if not s: continue
        w(f"| {n} | {fl} | {m.group(2*i+1)}/{m.group(2*i+2)} | {s['avg']:.1f} | {s['p99']:.1f} | {s['max']:.1f} | {s['floor']:.1f} | {s['avg']-s['floor']:+.1f} | {m.group(7)} |\n")
# utilisation with bulk: forward link bytes delivered over the open time
txt = open(f"{tmp}/bulk.out").read()
fwd = re.search(r'^forward\s+\d+\s+(\d+)', txt, re.M)
opent = 11.0 - sum(min(b, 11.0) - a for a, b in susp if a < 11.0)
util = int(fwd.group(1)) * 8 / (50e6 * opent) if fwd else 0
w(f"\n## With a bulk upload on the same link\n\nForward link delivered {int(fwd.group(1)) if fwd else 0} bytes in 11 s, "
  f"{opent:.2f} s of which outside suspensions: {100*util:.1f} % of 50 Mbit/s over the open time "
  "(payload bytes; target >= 90 %).\n\n")
w("## Targets (bypass + bucket)\n\n")
for fl in ('audio', 'ld-video'):
    s = S['bucket'][fl]
    w(f"* {fl}: average {s['avg']:.1f} ms vs floor {s['floor']:.1f} ms (excess {s['avg']-s['floor']:+.1f}, target <= 1.5): "
      f"{'met' if s['avg']-s['floor'] <= 1.5 else 'NOT met'}; max {s['max']:.1f} ms vs {longest*1e3+2+5:.0f} "
      f"(longest suspension + one-way + 5 ms): {'met' if s['max'] <= longest*1e3+7 else 'NOT met'}\n")
w(f"* HD video flowing: {S['bucket']['hd-video']['n']} frames received\n")
w(f"* bulk: {'met' if util >= 0.9 else 'NOT met'}\n")
w("* path-failed events: " + ", ".join(f"{n} {M[n].group(7)}" for n in S) + "\n\n")
w("![latency over time](media-latency.png)\n\n`media-latency.png`: delay of each audio and LD-video frame over its send time, bypass + bucket, with the floor.\n")
# plot data
with open(f"{tmp}/plot.dat", 'w') as p:
    for fl in ('audio', 'ld-video'):
        for r in csv.DictReader(open(f"{tmp}/bucket.frames.csv")):
            if r['flow'] == fl:
                s = float(r['sent_s'])
                p.write(f"{s:.4f} {(float(r['recv_s'])-s)*1e3:.3f} {floor(s)*1e3:.3f}\n")
        p.write("\n\n")
PY
gnuplot <<GP
set terminal pngcairo size 1000,500
set output "$out/media-latency.png"
set xlabel "send time (s)"
set ylabel "delay (ms)"
set title "media-wifi, bypass + bucket ($cc)"
plot "$tmp/plot.dat" index 0 using 1:2 with points pt 7 ps 0.4 title "audio", \
     "" index 1 using 1:2 with points pt 7 ps 0.4 title "LD video", \
     "" index 0 using 1:3 with lines lw 1 title "floor"
GP
echo "wrote $out/media.md"
