#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The media experiment (docs/experiments/media.md): bench/scenarios/media-wifi.ini (picoquic's
# mediatest_wifi link and suspension schedule) run in the simulator with the
# three media flows, as base (no bypass) / bypass (no cap) / bypass + bucket
# (1 Mbit/s, 2,560 B), then bypass + bucket with a bulk upload sharing the
# link. Per flow: frames, average / p99 / max delay and the floor: the
# delay a perfect sender would see on that schedule (one-way delay plus the
# wait until the suspension holding the frame ends), computed here from the
# ini's suspend_list. Writes docs/experiments/media.md, media-*.csv and the
# latency-over-time plot media-latency.png. Runs CUBIC (the main tables and
# the plot) and BBR; --cc NAME runs one controller only. Bypass + bucket
# also runs with both links at 30, 40 and 80 Mbit/s (the "other link rates"
# table). The base run also writes a qlog: the script takes each audio frame's first transmission from
# it to split the delay into time in the sender and time in the network.
# Then the schedule family (member() below): seeded random suspensions at
# 10 / 20 / 50 Mbit/s x 2 / 15 / 30 ms one way, with and without a bulk
# neighbour on the media connection; table "The schedule family" and
# media-family.csv (one row per member); per member bench/media_ahead.py
# splits what the urgent frames waited behind (table "Where the excess
# comes from"). It and ahead() below replay the sender's qlog through the
# same model of the forward link, bench/media_link.py.
# usage: bench/media.sh [BUILD_DIR (build/release, else build/debug)] [--cc cubic]
set -euo pipefail
build=build/release
[ -x "$build/quack" ] || build=build/debug
ccs="cubic bbr"
while [ $# -gt 0 ]; do
    case $1 in
    --cc) ccs=$2; shift ;;
    *) build=$1 ;;
    esac
    shift
done
ini=bench/scenarios/media-wifi.ini
out=docs/experiments
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

run() { # name bypass bulk cc
    local name=$1 bypass=$2 bulk=$3 cc=$4 f="$tmp/$1.ini" q=
    [ "$name" = base-cubic ] && q="\nqlog = $tmp/qlog" && mkdir -p "$tmp/qlog"
    case $name in bucket-*) q="\nqlog = $tmp/qlog-$name" && mkdir -p "$tmp/qlog-$name" ;; esac
    sed -e "s/^bypass = .*/bypass = $bypass/" -e "s/^cc = .*/cc = $cc/" \
        -e "s|^duration = 10s|duration = 10s\nframes = $tmp/$name.frames.csv$q|" "$ini" >"$f"
    if [ "$bulk" = 1 ]; then
        printf '\n[flow.bulk]\ntype = quic\nfrom = a\nto = b\ndirection = upload\nduration = 10s\ncc = %s\nwindow = 8MiB\n' "$cc" >>"$f"
    fi
    "$build/quack" sim "$f" >"$tmp/$name.out"
}
rates="30 40 80"
sweep() { # cc rate: bypass + bucket with both links at RATE Mbit/s
    local f="$tmp/rate$2-$1.ini"
    sed -e "s/^bypass = .*/bypass = bucket/" -e "s/^cc = .*/cc = $1/" -e "s/^rate = .*/rate = $2mbit/" \
        -e "s|^duration = 10s|duration = 10s\nframes = $tmp/rate$2-$1.frames.csv|" "$ini" >"$f"
    "$build/quack" sim "$f" >"$tmp/rate$2-$1.out"
}
for cc in $ccs; do
    for r in $rates; do sweep $cc $r; done
    run base-$cc off 0 $cc
    run bypass-$cc on 0 $cc
    run bucket-$cc bucket 0 $cc
    run bulk-$cc bucket 1 $cc
    cp "$tmp/bucket-$cc.frames.csv" "$out/media-bucket-$cc.csv"
done
# The schedule family: both links at RATE Mbit/s and OWD ms one way, 30
# suspensions of 20-300 ms with gaps of 10-300 ms from 1 s, drawn from SEED
# (link key suspend_random; quack sim prints the list), the same media flow,
# bypass + bucket, with and without a bulk upload on the same connection.
fam_rates="10 20 50" fam_owds="2 15 30" fam_seeds="1 2 3 4 5"
fam_gen() { echo "seed $1, count 30, length 20ms-300ms, gap 10ms-300ms, start 1s"; }
member() { # rate owd seed bulk cc
    local n="fam-r$1-d$2-s$3-$4-$5" l
    l="rate = $1mbit\ndelay = $2ms\nsuspend_random = $(fam_gen "$3")"
    printf "[sim]\ntopology = p2p\nduration = 12s\nseed = %s\n[link.forward]\n$l\n[link.return]\n$l\n" "$3" >"$tmp/$n.ini"
    printf "[flow.media]\ntype = media\nfrom = a\nto = b\ncc = %s\nduration = 10s\nbypass = bucket\nbulk = %s\nframes = %s\nqlog = %s\n" \
        "$5" "$4" "$tmp/$n.frames.csv" "$tmp/$n.qlog" >>"$tmp/$n.ini"
    mkdir -p "$tmp/$n.qlog"
    "$build/quack" sim "$tmp/$n.ini" >"$tmp/$n.out"
    # what each urgent frame waited behind (bench/media_ahead.py), then drop the qlog (~3 MB)
    python3 bench/media_ahead.py "$tmp/$n.ini" "$tmp/$n.out" "$tmp/$n.frames.csv" "$tmp/$n.qlog" >"$tmp/$n.ahead"
    rm -rf "$tmp/$n.qlog"
    # The same member with the simulator's oracle (flow key oracle, docs/sim.md):
    # non-urgent data waits from one one-way delay + 0.5 ms after each
    # forward suspension begins, the earliest any ACK could say so.
    sed -e "s|^frames = .*|frames = $tmp/orc-${n#fam-}.frames.csv|" -e '/^qlog = /d' \
        -e 's/^bulk = .*/&\noracle = forward/' "$tmp/$n.ini" >"$tmp/orc-${n#fam-}.ini"
    "$build/quack" sim "$tmp/orc-${n#fam-}.ini" >"$tmp/orc-${n#fam-}.out"
    # LD video alone on the connection (flow key flows): what this sender
    # does with nothing else to send, beside the any-sender bound (alone()).
    [ "$4" = off ] || return 0
    sed -e "s|^frames = .*|frames = $tmp/lda-${n#fam-}.frames.csv|" -e '/^qlog = /d' \
        -e 's/^bulk = .*/&\nflows = ld/' "$tmp/$n.ini" >"$tmp/lda-${n#fam-}.ini"
    "$build/quack" sim "$tmp/lda-${n#fam-}.ini" >"$tmp/lda-${n#fam-}.out"
}
# A longer call: 40 s of media over 128 suspensions, 30 ms one way, BBR,
# bypass + bucket (what the HD video's delay does once the family's 10 s
# are over; the pipe limit's path estimate must not decay under its own
# limit, recovery.c bw_max_update).
long_member() { # rate seed
    local n="long-r$1-s$2" l
    l="rate = $1mbit\ndelay = 30ms\nsuspend_random = seed $2, count 128, length 20ms-300ms, gap 10ms-300ms, start 1s"
    printf "[sim]\ntopology = p2p\nduration = 44s\nseed = %s\n[link.forward]\n$l\n[link.return]\n$l\n" "$2" >"$tmp/$n.ini"
    printf "[flow.media]\ntype = media\nfrom = a\nto = b\ncc = bbr\nduration = 40s\nbypass = bucket\nframes = %s\n" \
        "$tmp/$n.frames.csv" >>"$tmp/$n.ini"
    "$build/quack" sim "$tmp/$n.ini" >"$tmp/$n.out"
}
export -f member fam_gen long_member
export build tmp
for r in 20 50; do for s in 1 2 3; do echo "$r $s"; done; done | xargs -P 2 -L 1 bash -c 'long_member "$@"' _
for cc in $ccs; do for r in $fam_rates; do for d in $fam_owds; do for s in $fam_seeds; do
    for b in off on; do echo "$r $d $s $b $cc"; done
done; done; done; done | xargs -P 2 -L 1 bash -c 'member "$@"' _
rm -f "$out"/media-base.csv "$out"/media-bypass.csv "$out"/media-bucket.csv "$out"/media-bulk.csv
cc=${ccs%% *}

python3 - "$ini" "$tmp" "$out" "$ccs" "$(git rev-parse --short HEAD)" "$rates" <<'PY'
import sys, re, csv, glob, json
sys.path.insert(0, 'bench')  # run from the top of the tree, as bench/media_ahead.py above
import media_link
ini, tmp, out, ccs, rev, rates = sys.argv[1:]
rates = rates.split()
ccs = ccs.split()
cc = ccs[0]
susp = []
for line in open(ini):
    if line.startswith("suspend_list"):
        for p in line.split('=', 1)[1].split(','):
            a, b = p.strip().split('-')
            susp.append((float(a[:-2]) / 1e3, float(b[:-2]) / 1e3))
susp = sorted(set(susp))
owd = 0.002
def floor(s): return media_link.floor(susp, owd, s)
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
RUNS = ('base', 'bypass', 'bucket', 'bulk')
S = {(n, c): stats(f"{n}-{c}") for n in RUNS for c in ccs}
M = {k: sent(f"{k[0]}-{k[1]}") for k in S}
def util_of(c):
    txt = open(f"{tmp}/bulk-{c}.out").read()
    fwd = re.search(r'^forward\s+\d+\s+(\d+)', txt, re.M)
    opent = 11.0 - sum(min(b, 11.0) - a for a, b in susp if a < 11.0)
    return (int(fwd.group(1)) if fwd else 0), opent, (int(fwd.group(1)) * 8 / (50e6 * opent) if fwd else 0)
def sender_split():
    """base-<first cc>: each audio frame's first transmission of its last byte
    (client qlog) -> time in the sender vs time in the network."""
    tx = {}
    for fn in glob.glob(f"{tmp}/qlog/*client*"):
        for line in open(fn):
            if 'packet_sent' not in line: continue
            e = json.loads(line.strip().lstrip('\x1e'))
            for x in e['data'].get('frames', []):
                if x['frame_type'] == 'stream' and x['stream_id'] == 2:
                    tx.setdefault(x['offset'], e['time'] / 1e3)
    cwnd = 0
    for fn in glob.glob(f"{tmp}/qlog/*client*"):
        for line in open(fn):
            m = re.search(r'"congestion_window":(\d+)', line)
            if m: cwnd = max(cwnd, int(m.group(1)))
    resent = sum(1 for fn in glob.glob(f"{tmp}/qlog/*client*") for line in open(fn)
                 if 'packet_sent' in line and '"stream_id":2,' in line) - len(tx)
    hold, net, n = 0.0, 0.0, 0
    for r in csv.DictReader(open(f"{tmp}/base-{cc}.frames.csv")):
        if r['flow'] != 'audio': continue
        off = int(r['frame']) * 32  # audio frames are 32 B, back to back on stream 2
        if off not in tx: continue
        s = float(r['sent_s'])
        hold += tx[off] - s
        net += float(r['recv_s']) - tx[off] - floor(s)
        n += 1
    return n, hold / max(n, 1) * 1e3, net / max(n, 1) * 1e3, cwnd, resent
def ahead(c):
    """bucket-<c>, the sender's qlog: for each suspension in 5-11 s that follows
    an opening of at most 20 ms, the HD video ahead of the first LD frame
    written in it, from a model of the forward link (a FIFO serving UDP
    payload at 50 Mbit/s, closed during the ini's suspensions, fed with the
    sender's packets at their qlog times): HD bytes still in the link when it
    suspends, and HD bytes the sender put into the suspended link before that
    frame. Also the sender's pacing rate (median after 4 s; 0 = cwnd/srtt
    pacing, not a controller-set rate) and the longest run of data packets
    (>= 1000 B) sent at one instant after 4 s."""
    rates = []
    for fn in glob.glob(f"{tmp}/qlog-bucket-{c}/*client*"):
        for line in open(fn):
            if 'pacing_rate' not in line: continue
            e = json.loads(line.strip().lstrip('\x1e'))
            if e['time'] / 1e3 >= 4 and 'pacing_rate' in e['data']:
                rates.append(e['data']['pacing_rate'])
    pk = media_link.sent_packets(f"{tmp}/qlog-bucket-{c}")
    tot = {}
    for _, _, st in pk:
        for k, _, v in st: tot[k] = tot.get(k, 0) + v
    hd = max(tot, key=tot.get)  # HD video carries the most bytes
    ent, run, maxrun, last = [], 0, 0, -1.0
    for (t, l, st), (start, _) in zip(pk, media_link.service(pk, 50e6, lambda t: media_link.resume(susp, t))):
        ent.append((t, start, sum(v for k, _, v in st if k == hd)))
        if t >= 4 and l >= 1000:
            run = run + 1 if t == last else 1
            last, maxrun = t, max(maxrun, run)
    ld = [(float(r['sent_s']), float(r['recv_s'])) for r in
          csv.DictReader(open(f"{tmp}/bucket-{c}.frames.csv")) if r['flow'] == 'ld-video']
    rows, prev_b = [], 0.0
    for a, b in susp:
        opening, prev_b = a - prev_b, b
        f = [(s_, r_) for s_, r_ in ld if a <= s_ < b]
        if a < 5 or opening > 0.020 + 1e-9 or not f: continue
        f0 = min(s_ for s_, _ in f)
        queued = sum(h for t, st, h in ent if t < a and st >= a)
        into = sum(h for t, st, h in ent if a <= t < f0)
        exc = sum(r_ - s_ - floor(s_) for s_, r_ in f) / len(f) * 1e3
        sent_open = sum(h for t, st, h in ent if a - opening <= t < a)
        rows.append((a, b, opening, queued, into, exc, len(f), sent_open))
    rates.sort()
    med = rates[len(rates) // 2] / 1e6 if rates else 0.0
    return rows, med, maxrun
def alone(fr, f_, sp, rate, owd, slack, fl):
    """A lower bound on one flow's average excess over the floor that holds for
    every sender: the flow's frames alone through the link (the receiver reads
    its stream in order, so a frame is complete only once the stream's earlier
    bytes have crossed too), each handed over when written, no header bytes at
    all, serialized only while the link is not suspended -- except that, as in
    the simulator's link (src/sim/link.c start_service), a datagram that starts
    before a suspension finishes in it: up to `slack` bytes (one datagram: 1,500
    on an Ethernet path, 65,527 the largest QUIC allows, RFC 9000 §18.2) per
    suspension."""
    res = lambda t: media_link.resume(sp, t)
    free, acc = 0.0, []
    for r in sorted((r for r in fr if r['flow'] == f_), key=lambda r: float(r['sent_s'])):
        s_ = float(r['sent_s'])
        t, left = res(max(s_, free)), int(r['bytes']) * 8 / rate
        while True:
            nxt = min([a for a, b in sp if a > t] + [float('inf')])
            if t + left <= nxt: t += left; break
            left -= nxt - t
            if left <= slack * 8 / rate: t = nxt + left; break
            left -= slack * 8 / rate
            t = res(nxt)
        free = t
        acc.append(free + owd - s_ - fl(s_))
    return sum(acc) / len(acc) * 1e3
def family(w):
    """The seeded schedule family (bench/media.sh's member()): per member the
    average excess over the floor of audio and LD video, the audio maximum
    against longest suspension + one way + 5 ms, HD frames received, and the
    urgent-only reference: the excess the same audio and LD frames would see
    through the same link with nothing else in it (a FIFO, each frame handed
    over when written, 40 B of headers per 1,400 B packet): what a sender
    that never lets a non-urgent byte into the link ahead of an urgent one
    still gets, since the floor counts no queueing of urgent frames behind
    each other when a suspension ends."""
    rows = []
    for fn in sorted(glob.glob(f"{tmp}/fam-*.out")):
        name = fn.split('/')[-1][4:-4]
        rate, owd, seed, bulk, c = name.split('-')
        rate, owd = int(rate[1:]) * 1e6, int(owd[1:]) / 1e3
        txt = open(fn).read()
        sp = media_link.suspensions(txt)
        fl = lambda s: media_link.floor(sp, owd, s)
        res = lambda s: media_link.resume(sp, s)
        excess = lambda rows, f_: media_link.excess_ms(rows, f_, sp, owd)
        fr = list(csv.DictReader(open(f"{tmp}/fam-{name}.frames.csv")))
        ofr = list(csv.DictReader(open(f"{tmp}/orc-{name}.frames.csv")))
        ex, mx, ref, oex = {}, {}, {}, {}
        for f_ in ('audio', 'ld-video'):
            ex[f_], oex[f_] = excess(fr, f_), excess(ofr, f_)
            mx[f_] = max(float(r['recv_s']) - float(r['sent_s']) for r in fr if r['flow'] == f_) * 1e3
        free, acc = 0.0, {}
        for r in sorted((r for r in fr if r['flow'] != 'hd-video'), key=lambda r: float(r['sent_s'])):
            s_, by = float(r['sent_s']), int(r['bytes'])
            free = res(max(s_, free)) + (by + (by + 1399) // 1400 * 40) * 8 / rate
            acc.setdefault(r['flow'], []).append(free + owd - s_ - fl(s_))
        for f_, v in acc.items(): ref[f_] = sum(v) / len(v) * 1e3
        bnd = {(f_, sl): alone(fr, f_, sp, rate, owd, sl, fl) for f_ in ('audio', 'ld-video') for sl in (1500, 65527)}
        lda = excess(list(csv.DictReader(open(f"{tmp}/lda-{name.replace('-on-', '-off-')}.frames.csv"))), 'ld-video')
        hd = re.search(r'hd (\d+)/(\d+)', txt)
        ah = dict(zip(('excess', 'model', 'urgent', 'pre', 'first', 'after', 'open', 'sender', 'missed'),
                      map(float, open(f"{tmp}/fam-{name}.ahead").read().split()[3:])))
        tgt = 1.5 + 2 * 1452 * 8 / rate * 1e3
        bound = max(b - a for a, b in sp) * 1e3 + owd * 1e3 + 5
        rows.append(dict(rate=int(rate / 1e6), owd=int(owd * 1e3), seed=int(seed[1:]), bulk=bulk, cc=c,
                         au=ex['audio'], ld=ex['ld-video'], au_ref=ref['audio'], ld_ref=ref['ld-video'],
                         au_bnd=bnd['audio', 1500], ld_bnd=bnd['ld-video', 1500],
                         au_bnd64=bnd['audio', 65527], ld_bnd64=bnd['ld-video', 65527], ld_alone=lda,
                         au_max=mx['audio'], bound=bound, tgt=tgt, hd_recv=int(hd.group(1)), hd_sent=int(hd.group(2)),
                         avg_ok=ex['audio'] <= tgt and ex['ld-video'] <= tgt, max_ok=mx['audio'] <= bound,
                         hd_ok=hd.group(1) == hd.group(2), **{'ah_' + k: v for k, v in ah.items()},
                         orc_au=oex['audio'], orc_ld=oex['ld-video'],
                         orc_ok=oex['audio'] <= tgt and oex['ld-video'] <= tgt))
    with open(f"{out}/media-family.csv", 'w') as f:
        cw = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        cw.writeheader()
        for r in rows: cw.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    n = len(rows)
    cnt = lambda k: sum(1 for r in rows if r[k])
    allok = sum(1 for r in rows if r['avg_ok'] and r['max_ok'] and r['hd_ok'])
    refok = sum(1 for r in rows if r['au_ref'] <= r['tgt'] and r['ld_ref'] <= r['tgt'])
    bndko = [r for r in rows if max(r['au_bnd'], r['ld_bnd']) > r['tgt']]
    bndko64 = sum(1 for r in rows if max(r['au_bnd64'], r['ld_bnd64']) > r['tgt'])
    bndrates = sorted({r['rate'] for r in bndko})
    lda = [r for r in rows if r['bulk'] == 'off' and r['rate'] in bndrates]
    w("## The schedule family (bypass + bucket)\n\n"
      "`bench/media.sh` also runs the media flow over schedules drawn from seeds: both links at "
      "10 / 20 / 50 Mbit/s x 2 / 15 / 30 ms one way x seeds 1-5 of `suspend_random = "
      f"{'seed N, count 30, length 20ms-300ms, gap 10ms-300ms, start 1s'}` (both directions; "
      "30 suspensions of 20-300 ms, gaps of 10-300 ms, about half the time suspended), without and "
      "with a bulk upload at urgency 7 on the same connection (`bulk = on`), "
      f"{' and '.join(ccs)}: {n} members, per member in `media-family.csv`. Targets: audio and LD "
      "video average <= floor + 1.5 ms + two 1,452 B datagrams at the rate (the tgt column); audio max "
      "<= longest suspension + one way + 5 ms; every HD frame delivered.\n\n"
      f"Members meeting: the averages {cnt('avg_ok')}, the audio max {cnt('max_ok')}, HD {cnt('hd_ok')}, "
      f"all three {allok} of {n}. The urgent-only reference (see `family()` in the script: "
      "audio and LD frames alone through the same link) is within the average target in "
      f"{refok} of {n}: in the others no sender that hands each urgent frame to the link when it is "
      "written meets it, whatever it does with HD video. "
      f"**No sender at all meets the average target in {len(bndko)} of {n} members** (all at "
      f"{' / '.join(map(str, bndrates))} Mbit/s): the LD video's own frames, alone in the link, "
      "handed over when written, without a single header byte and with one 1,500 B datagram "
      "allowed to finish inside each suspension as the simulator's link lets it, already average "
      "more than the target over the floor (the LD bound column below; `alone()` in the script). "
      "The receiver reads the LD stream in order, so each frame waits for the LD bytes written "
      "before it in the same suspension (2 kB frames every 33 ms, a 32 kB I-frame every 100th: "
      "26 ms of serialization at 10 Mbit/s), and the floor counts none of that. With datagrams "
      f"as large as QUIC allows (65,527 B) the bound still exceeds the target in {bndko64}. "
      "The simulator agrees: this sender with the LD video alone on the connection (flow key "
      f"`flows = ld`, bypass + bucket) averages {min(r['ld_alone'] for r in lda):+.2f} to "
      f"{max(r['ld_alone'] for r in lda):+.2f} ms over the floor at {' / '.join(map(str, bndrates))} "
      f"Mbit/s (target {lda[0]['tgt']:.2f}; {len(lda)} runs).\n\n"
      "Where the rest comes from (the table \"Where the excess comes from\" below splits it per "
      "member): every audio and LD frame written during a suspension waits, when it ends, behind "
      "(1) the urgent frames written before it in the same suspension (the reference column: at "
      "10 Mbit/s alone above the target) and (2) the non-urgent data the sender put into the link "
      "before it could know the link had stopped: ACKs already on their way keep arriving for one "
      "one-way delay after the suspension begins, and the hold (`feedback_late`) starts half a min "
      "RTT + 1 ms after the last of them, so an HD frame or two (6 kB each, 2.5 ms at 20 Mbit/s) "
      "enters nearly every suspension, and more when the suspension begins while the HD backlog "
      "of the last one is still being released (short gaps). Most of it goes in the first one-way "
      "delay, which no sender can know about (the first column of the split); an earlier hold "
      "would take only the after column. The simulator's oracle (flow key `oracle`, docs/sim.md: "
      "non-urgent data waits from one one-way delay + 0.5 ms after each suspension begins until as "
      f"long after it ends, which no acknowledgement-driven detector can beat) meets the averages "
      f"in {cnt('orc_ok')} of {n} members (the last columns of the split). Tried while "
      "investigating (not run by this script): holding non-urgent data as soon as an ACK was one "
      "min RTT + 1 ms late for the packet that should have drawn it (the first beyond the "
      "ack-eliciting threshold asked of the peer) held HD video on false alarms and met fewer "
      "averages (11 of 180); a pipe limit at a fraction of the BDP met more averages (24 at 0.75, "
      "29 at 0.5, 35 at 0.35) by starving HD video (HD delivered in 117 / 96 / 83 members, from "
      "167): the delivery-rate samples then measure the limit and the limit shrinks with them; "
      "no slack above the BDP in that limit (QK_PIPE_SLACK_PKTS 0 instead of 2) met 24, HD in 128; "
      "sending non-urgent data only in the first 25 / 50 / 100 ms after the link came back (a crude "
      "bet on when the next suspension comes) met 17 / 20 / 15, HD in 63 / 89 / 99. "
      "HD video needs about two thirds of the open time at 10 Mbit/s. "
      "(3) With a "
      "bulk neighbour, the standing queue it builds: CUBIC's window and BBR's recent RTT both "
      "include it; the pipe limit now also applies the delivery-rate BDP "
      "(`qk_recovery_max_delivery_rate` x min_rtt + 2 datagrams) to every controller, which took "
      "the neighbour's cost from +130 ms (CUBIC, 20 Mbit/s, 15 ms) to the figures below; at "
      "10 Mbit/s it delays HD video (HD column), and at 10 Mbit/s and 30 ms the bulk never gets a "
      "byte through (its rows equal those without it).\n\n"
      "Per rate, one way, bulk and controller (5 seeds): members meeting the averages / the max / HD; "
      "average excess over the floor (worst seed), ms; the urgent-only reference (average of the seeds); "
      "the any-sender LD bound (1,500 B datagrams; average and worst seed):\n\n"
      "| Mbit/s | one way (ms) | bulk | cc | avg / max / HD met | tgt (ms) | audio excess | LD excess | audio ref | LD ref | LD bound | audio max - bound (worst, ms) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    keys = sorted({(r['rate'], r['owd'], r['bulk'], r['cc']) for r in rows})
    for k in keys:
        g = [r for r in rows if (r['rate'], r['owd'], r['bulk'], r['cc']) == k]
        m = lambda f: sum(r[f] for r in g) / len(g)
        w(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {sum(r['avg_ok'] for r in g)} / {sum(r['max_ok'] for r in g)} / "
          f"{sum(r['hd_ok'] for r in g)} | {g[0]['tgt']:.2f} | {m('au'):+.2f} ({max(r['au'] for r in g):+.2f}) | "
          f"{m('ld'):+.2f} ({max(r['ld'] for r in g):+.2f}) | {m('au_ref'):+.2f} | {m('ld_ref'):+.2f} | "
          f"{m('ld_bnd'):+.2f} ({max(r['ld_bnd'] for r in g):+.2f}) | "
          f"{max(r['au_max'] - r['bound'] for r in g):+.1f} |\n")
    w("\n")
    # The same runs judged by other readings of the target, for whoever restates it.
    feas = [r for r in rows if max(r['au_bnd'], r['ld_bnd']) <= r['tgt']]
    over = lambda r: r['au'] - r['au_bnd'] <= r['tgt'] and r['ld'] - r['ld_bnd'] <= r['tgt']
    w("The same runs judged by other readings of the averages target (members meeting it, of those "
      f"judged): as written, {cnt('avg_ok')} of {n}; only the members where the any-sender bound "
      f"is within the target, {sum(1 for r in feas if r['avg_ok'])} of {len(feas)}; excess over "
      "the any-sender bound (instead of over the floor) within the same allowance, "
      f"{sum(1 for r in rows if over(r))} of {n}; the same without the bulk neighbour, "
      f"{sum(1 for r in rows if over(r) and r['bulk'] == 'off')} of "
      f"{sum(1 for r in rows if r['bulk'] == 'off')}.\n\n")
    unk = sum(1 for r in rows if r['ah_urgent'] + r['ah_first'] > r['tgt'])
    w("### Where the excess comes from\n\n"
      "Per member, `bench/media_ahead.py` replays the sender's qlog through a model of the forward link "
      "(a FIFO at the link rate, closed during the suspensions) and splits what each audio and LD frame "
      "waited behind: urgent frames written before it (the reference's part); non-urgent data (HD "
      "video, the bulk neighbour) already in the link when the suspension holding the frame began "
      "(pre), sent in that suspension's first one-way delay (first: no acknowledgement can yet have "
      "told any sender that the link stopped; ACKs sent before the suspension keep arriving for that "
      "long), sent later in the suspension (after: what a sender that saw the suspension as early as "
      "physics allows would have held; ours holds half a min RTT + 1 ms after the last ACK, "
      "`feedback_late`), or queued ahead of a frame written while the link was open (open); and the "
      "frame's time in the sender beyond the floor's own wait (sender: to the first transmission of its "
      "last byte; pacing, the bypass bucket, stream and connection credit, and earlier frames of the "
      "same stream, which the receiver reads in order), and the wait for the end of a later suspension "
      "when its last byte went out that late (missed). Averages over audio and LD frames and "
      "the 5 seeds, ms; model = the replay's excess, for comparison with the measured one:\n\n"
      "| Mbit/s | one way (ms) | bulk | cc | tgt | excess | model | urgent | pre | first | after | open | sender | missed | urgent + first | oracle: audio / LD excess | avg met: oracle / own rule |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for k in keys:
        g = [r for r in rows if (r['rate'], r['owd'], r['bulk'], r['cc']) == k]
        m = lambda f: sum(r[f] for r in g) / len(g)
        w(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {g[0]['tgt']:.2f} | " +
          " | ".join(f"{m('ah_' + f):.2f}" for f in ('excess', 'model', 'urgent', 'pre', 'first', 'after', 'open', 'sender', 'missed')) +
          f" | {m('ah_urgent') + m('ah_first'):.2f} | {m('orc_au'):+.2f} / {m('orc_ld'):+.2f} | "
          f"{sum(r['orc_ok'] for r in g)} / {sum(r['avg_ok'] for r in g)} |\n")
    w(f"\nIn {unk} of {n} members urgent + first alone exceeds the target: with the HD video and bulk "
      "this sender put into the link in each suspension's first one-way delay, no detector, however "
      "early, brings those members within it; what is left is to send less non-urgent data at the "
      "moments a suspension might begin, which is a prediction of the suspensions (or less HD video "
      "overall). The sender and missed columns at 30 ms one way are mostly LD I-frames (traced on "
      "50 Mbit/s, seed 4, while investigating): a 32 kB I-frame written in a suspension drips "
      "through the bypass bucket (1 Mbit/s, in packets of about 90 B as its tokens come), then "
      "waits for stream and connection credit once the link is back (the receiver's 64 KiB / "
      "256 KiB windows; its MAX_STREAM_DATA and MAX_DATA come an RTT later), misses a short "
      "opening and waits for the end of the next suspension, and the LD frames written after it "
      "wait with it (one stream, read in order). With the media receiver's windows at 1 MiB / "
      "16 MiB (tried, not run by this script) 19 of 180 members met the averages.\n\n")
o = open(f"{out}/media.md", 'w')
w = o.write
w("# Urgent media over bad Wi-Fi: urgency, the capped CC bypass\n\n")
w(f"Written by `bench/media.sh` at {rev} (simulator; {', '.join(ccs)}). Scenario: "
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
for c in ccs:
    w(f"## The seed's table, quack, {c} (ms)\n\n| | base | bypass | bypass + bucket | floor |\n|---|---|---|---|---|\n")
    for fl, lab in (('audio', 'Audio'), ('ld-video', 'LD video')):
        w(f"| {lab} latency average | " + " | ".join(f"{S[(n, c)][fl]['avg']:.1f}" for n in RUNS[:3]) + f" | {S[('bucket', c)][fl]['floor']:.1f} |\n")
        w(f"| {lab} latency max | " + " | ".join(f"{S[(n, c)][fl]['max']:.1f}" for n in RUNS[:3]) + f" | {S[('bucket', c)][fl]['floor_max']:.1f} |\n")
    w("\n")
w("picoquic's figures in the seed (µs in the seed, here ms): audio average 42.8 / 42.6 / 42.2, "
  "max 240.6 / 237.9 / 237.9; LD video average 45.5 / 44.1 / 44.3, max 238.0.\n\n")
n_split, hold_ms, net_ms, cwnd_max, resent = sender_split()
linkdrops = re.search(r'^forward\s+\d+\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)', open(f"{tmp}/base-{cc}.out").read(), re.M)
drops = sum(int(x) for x in linkdrops.groups()) if linkdrops else -1
byp = {k: re.search(r'bypass=(\d+)', open(f"{tmp}/{k[0]}-{k[1]}.out").read()).group(1) for k in S}
w("## Why base is above the floor, and what the bypass changes\n\n"
  f"In the base run ({cc}) the sender puts each audio frame on the wire "
  f"{hold_ms:.2f} ms on average after the application wrote it (first transmission of its "
  f"last byte, from the client's qlog, {n_split} frames); its {net_ms:+.2f} ms over the floor "
  "is all spent in the network, in the suspended link's FIFO queue: during a suspension "
  f"no ACK comes back, the window (up to {cwnd_max} B in this run against a 25 kB path "
  f"BDP; the link dropped {drops} packets) keeps admitting HD video, and every audio frame "
  "written later waits behind it when the link resumes. When the link opens for only "
  "10-20 ms (5-11 s) the queue does not drain and the audio frame waits for the next "
  "opening (the 278 ms maxima). Retransmissions play no part: audio stream "
  f"frames sent again: {resent}. The window rarely blocks the media, so the bypass alone "
  "changes little (bypass packets: " + ", ".join(f"{k[0]}-{k[1]} {v}" for k, v in byp.items()) +
  "; before the rule below base, bypass and bucket were within 0.2 ms).\n\n"
  "The rule (src/transport/conn/conn_send.c `feedback_late`, on only with a bypass "
  "configured): while packets are outstanding and no ACK has arrived for half the "
  "path's min RTT + 1 ms, only data with urgency below the bypass limit is sent (through "
  "the bucket); everything else waits in the sender, where the scheduler orders it by "
  "urgency, until an ACK says the link moves again. Sending less than the window allows "
  "is always allowed (RFC 9002 §7); ACKs and PTO probes are not held. The same runs "
  "before the rule (this file at ee9da02): bypass + bucket audio +5.4 ms over the floor, "
  "LD video +6.6, maxima 278 / 319 ms. A false alarm (ACKs merely slow) costs HD video "
  "the wait for the next ACK: compare the HD rows of base and bucket below.\n\n")
A = {c: ahead(c) for c in ccs}
if len(ccs) > 1:
    w("## BBR and the pipe limit (bypass + bucket)\n\n"
      "From 5 s the link opens for only 10-20 ms between suspensions. Each opening "
      "releases the HD video held during the suspension before it (the hold above), "
      "more than the link carries in what is left of 10-20 ms once the sender has heard "
      "that it resumed (an RTT); what the sender puts into the link "
      "but the link has not sent when the next suspension starts, or what it sends "
      "into that suspension before its ACKs are late, waits there ahead of the LD "
      "frames written in it. BBR sends the held video at its bandwidth estimate times "
      "the ProbeBW_UP gain 1.25 (an application-limited flow stays in ProbeBW_UP because "
      "the full-pipe check skips application-limited samples, draft-ietf-ccwg-bbr "
      "§5.3.3.9 IsTimeToGoDown, §5.3.1.2) with up to its window in flight: 2 BDP plus the "
      "ACK-aggregation allowance (§5.6.4.2 UpdateMaxInflight), about twice the pipe. "
      "Before the rule below (this file at 25a5258) BBR had 77458 B of HD video in the "
      "link at the starts of the suspensions in the table and sent 82728 B into them, "
      "and its LD video averaged +1.56 ms over the floor, the one target then not met.\n\n"
      "The rule (src/transport/conn/conn_send.c `pipe_limit_bytes`, with a bypass "
      "configured and BBR, while urgent data flows: some sent within the last second): "
      "non-urgent data may bring bytes in flight only up to BBR's estimate of the pipe, "
      "§5.6.4.2 Inflight(bw, 1) -- BBR.bw times the least RTT of this round and the last "
      "(never below min_rtt) plus the quantization budget (recovery/cc/bbr.c "
      "`qk_cc_bbr_pipe_bytes`) -- instead of up to its window. The HD video beyond the "
      "pipe waits in the sender, where the scheduler lets LD video and audio pass "
      "(RFC 9218 §4.1), not in the link's FIFO queue ahead of them. Urgent data is not "
      "held; the packet that fills the limit asks for an IMMEDIATE_ACK, as one that fills "
      "the window does (the peer would otherwise hold up to its ACK_FREQUENCY threshold "
      "of the only packets in flight); while it holds data back the sender counts as "
      "application-limited, so BBR's rate samples, which then measure the limit, do not "
      "lower the bandwidth estimate the limit is made of (draft-ietf-ccwg-bbr §4.1.2.4). "
      "No limit before Startup has filled the pipe (BBR.bw is a lower bound still "
      "growing then) and none while no urgent data flows (a bulk download at urgency 6 "
      "on a bypass connection keeps BBR's headroom: tests/sim/test_media.c "
      "`test_hold_free_on_working_path`). The RTT is the recent least one and not "
      "min_rtt because a competing flow's standing queue is part of the pipe while it "
      "lasts: over min_rtt the limit held the media connection of the bulk run below to "
      "bw x min_rtt / rtt and its HD video to a fraction of its share. "
      "Per suspension after such an opening, HD bytes ahead of "
      "the first LD frame written in it (model of the forward link fed with the "
      "sender's qlog, see `ahead()` in the script), and the LD frames' average excess "
      "over the floor:\n\n| suspension (s) | opening (ms) | "
      + " | ".join(f"{c}: HD in link at start / sent into it (B) | {c}: LD excess (ms)" for c in ccs)
      + " |\n|---|---|" + "---|---|" * len(ccs) + "\n")
    keyed = {c: {(r[0], r[1]): r for r in A[c][0]} for c in ccs}
    for k in sorted(set().union(*[set(v) for v in keyed.values()])):
        w(f"| {k[0]:.2f}-{k[1]:.2f} | {(next(v[k] for v in keyed.values() if k in v)[2])*1e3:.0f} | "
          + " | ".join((f"{keyed[c][k][3]} / {keyed[c][k][4]} | {keyed[c][k][5]:+.1f}" if k in keyed[c] else "- | -") for c in ccs) + " |\n")
    w("| total | | " + " | ".join(f"{sum(r[3] for r in A[c][0])} / {sum(r[4] for r in A[c][0])} | {sum(r[5]*r[6] for r in A[c][0]) / max(1, sum(r[6] for r in A[c][0])):+.1f}" for c in ccs) + " |\n\n")
    cap = sum(r[2] for r in A[ccs[0]][0]) * 50e6 / 8
    w("HD video the sender put on the wire during these openings: "
      + ", ".join(f"{c} {sum(r[7] for r in A[c][0])} B" for c in ccs)
      + f" (the link carries {cap:.0f} B in them).\n\n")
    w("Sender pacing rate after 4 s (median of the qlog's metrics; 0 = paced at N x cwnd / srtt, "
      "no rate set by the controller), and the longest run of data packets sent at one "
      "instant after 4 s: " + "; ".join(f"{c} {A[c][1]:.1f} Mbit/s, {A[c][2]} packets" for c in ccs)
      + ". CUBIC's window over a smoothed RTT that the suspensions inflate paces the held "
      "video far slower than BBR, so more of it waits in the sender anyway. What did not "
      "bring BBR's LD average within the target alone (tried while investigating, not run "
      "by this script): pacing BBR at gain 1 (still about the link rate: it only moves bytes "
      "from the first column to the second), honouring its send quantum (below), capping "
      "its bandwidth estimate at the link rate, pacing at gain 1 while application-limited, "
      "dropping the ACK-aggregation allowance from its window; nor the limit without the "
      "IMMEDIATE_ACK at it (the peer held the packets under its threshold and HD video "
      "stalled) or at the phase's gain (Inflight(bw, 1.25) in ProbeBW_UP: not within the target either). HD video pays "
      "for the LD video's gain (the hd-video rows below).\n\n"
      "Fixed on the way: the pacer let a rate-based controller send at least 10 "
      "datagrams back to back (RFC 9002 §7.7's initial-window burst, a limit for "
      "window-based controllers) where BBR's send quantum (draft-ietf-ccwg-bbr "
      f"§5.6.3: 1 ms at the pacing rate, {A['bbr'][2] if 'bbr' in A else '-'} datagrams after 4 s in this run) is the aggregate; now BBR's "
      "quantum rules (conn_send.c `pacer_floor_pkts`, "
      "tests/sim/test_media.c `test_bbr_bursts_within_send_quantum`).\n\n")
w("## Per flow (frames received/sent, delays in ms)\n\n| cc | run | flow | frames | avg | p99 | max | floor avg | excess avg | path failed |\n|---|---|---|---|---|---|---|---|---|---|\n")
for (n, c) in S:
    m = M[(n, c)]
    for i, fl in enumerate(('audio', 'ld-video', 'hd-video')):
        s = S[(n, c)].get(fl)
        if not s: continue
        w(f"| {c} | {n} | {fl} | {m.group(2*i+1)}/{m.group(2*i+2)} | {s['avg']:.1f} | {s['p99']:.1f} | {s['max']:.1f} | {s['floor']:.1f} | {s['avg']-s['floor']:+.1f} | {m.group(7)} |\n")
w("\n## Other link rates (bypass + bucket)\n\nThe same schedule with both links at other rates "
  "(the floor does not depend on the rate; frames take longer to serialize below 50 Mbit/s). "
  "Average excess over the floor, ms, audio / LD video / HD video, and HD frames received:\n\n"
  "| rate (Mbit/s) | " + " | ".join(f"{c}: audio / LD / HD excess | {c}: HD frames" for c in ccs)
  + " |\n|---|" + "---|---|" * len(ccs) + "\n")
for r in sorted(rates + ['50'], key=int):
    cells = []
    for c in ccs:
        st = stats(f"rate{r}-{c}") if r != '50' else S[('bucket', c)]
        cells.append(" / ".join(f"{st[fl]['avg'] - st[fl]['floor']:+.2f}" for fl in ('audio', 'ld-video', 'hd-video'))
                     + f" | {st['hd-video']['n']}")
    w(f"| {r} | " + " | ".join(cells) + " |\n")
w("\nThe pipe limit is BBR's estimate of the path (bandwidth x recent least RTT), not a "
  "constant of this scenario. Below 50 Mbit/s the 10-20 ms openings carry less of the held "
  "video, and the frames of the next suspension wait behind more of it whichever the "
  "controller.\n")
w("\n## With a bulk upload on the same link\n\n")
for c in ccs:
    b, opent, util = util_of(c)
    w(f"* {c}: forward link delivered {b} bytes in 11 s, {opent:.2f} s of which outside suspensions: "
      f"{100*util:.1f} % of 50 Mbit/s over the open time (payload bytes; target >= 90 %).\n")
w("\nThe bulk flow is its own connection without urgency; sharing the FIFO queue with it "
  "the media flows see its standing queue (bulk rows above): the bypass and the hold "
  "act only within one connection.\n\n")
w("## Targets (bypass + bucket)\n\n")
for c in ccs:
    for fl in ('audio', 'ld-video'):
        s = S[('bucket', c)][fl]
        w(f"* {c} {fl}: average {s['avg']:.1f} ms vs floor {s['floor']:.1f} ms (excess {s['avg']-s['floor']:+.2f}, target <= 1.5): "
          f"{'met' if s['avg']-s['floor'] <= 1.5 else 'NOT met'}; max {s['max']:.1f} ms vs {longest*1e3+2+5:.0f} "
          f"(longest suspension + one-way + 5 ms): {'met' if s['max'] <= longest*1e3+7 else 'NOT met'}\n")
    if c == 'bbr' and S[('bucket', c)]['ld-video']['avg'] - S[('bucket', c)]['ld-video']['floor'] > 1.5:
        w("  (why: \"BBR and the pipe limit\" above)\n")
    w(f"* {c} HD video flowing: {S[('bucket', c)]['hd-video']['n']} frames received\n")
    w(f"* {c} bulk: {'met' if util_of(c)[2] >= 0.9 else 'NOT met'}\n")
w("* path-failed events: " + ", ".join(f"{n}-{c} {M[(n, c)].group(7)}" for (n, c) in S) + "\n\n")
w("Path-failed detection (`qk_config.path_failed_ns`) is armed only with the bypass on. "
  "The issue asks for it where a bypass drip could hide a dead path (\"the link cut for "
  "good while audio drips under the bypass\": tests/sim/test_media.c, failed within the "
  "limit + one PTO); without the bypass nothing keeps packets outstanding past the PTO, "
  "RFC 9002's PTO and the idle timeout decide as before, and a connection survives a "
  "3 s outage (the blackhole test), which a 1 s default would break. So it stays "
  "bypass-only; `QK_EV_PATH_DEGRADED` is raised either way.\n\n")
family(w)
def long_call(w):
    """bench/media.sh's long_member(): 40 s calls, per 10 s of send time."""
    w("## A longer call (40 s)\n\n"
      "The family's runs last 10 s. Here the same media flow runs 40 s (BBR, bypass + bucket) over "
      "`suspend_random = seed N, count 128, length 20ms-300ms, gap 10ms-300ms, start 1s` at 30 ms "
      "one way: average excess over the floor of audio and LD video, and the HD video's average "
      "delay (send to read) per 10 s of send time, ms. Before `bw_max_update` (src/transport/"
      "recovery/recovery.c) kept its estimate through windows whose samples were all "
      "application-limited, the pipe limit's path estimate fell by half or more some 20 s into "
      "such a call (at 20 Mbit/s, seed 1: from 9.4 to 3.5 Mbit/s), the limit with it, and the HD "
      "video fell 4-9 s behind: these runs on a build of ef2a74f gave HD video 3.8 / 2.4 / 3.6 s "
      "average at 20 Mbit/s and 0.8 / 0.4 / 0.2 s at 50 Mbit/s (seeds 1 / 2 / 3), with audio "
      "+7.54 / +6.77 / +6.84 and LD +9.11 / +8.99 / +9.51 ms at 20 Mbit/s (50 Mbit/s: audio "
      "+2.63 / +2.33 / +2.42, LD +6.08 / +3.66 / +4.36). The starved HD video had kept the link's "
      "queue short; now that it uses the openings, audio and LD video at 20 Mbit/s wait behind "
      "more of it (the rows below). The 10 s family is unchanged by it (its windows turn at most "
      "twice) but for HD video delivered in more members.\n\n"
      "| Mbit/s | seed | audio excess | LD excess | HD 0-10 s | HD 10-20 s | HD 20-30 s | HD 30-40 s | HD frames |\n"
      "|---|---|---|---|---|---|---|---|---|\n")
    for fn in sorted(glob.glob(f"{tmp}/long-*.out"), key=lambda f: [int(x[1:]) for x in f.split('/')[-1][:-4].split('-')[1:]]):
        name = fn.split('/')[-1][:-4]
        rate, seed = (int(x[1:]) for x in name.split('-')[1:])
        txt = open(fn).read()
        sp = media_link.suspensions(txt)
        owd = int(re.search(r'^delay = (\d+)ms$', open(f"{tmp}/{name}.ini").read(), re.M).group(1)) / 1e3
        fr = list(csv.DictReader(open(f"{tmp}/{name}.frames.csv")))
        ex = {f_: media_link.excess_ms(fr, f_, sp, owd) for f_ in ('audio', 'ld-video')}
        q = []
        for k in range(4):
            d = [float(r['recv_s']) - float(r['sent_s']) for r in fr
                 if r['flow'] == 'hd-video' and k * 10 <= float(r['sent_s']) < (k + 1) * 10]
            q.append(f"{sum(d) / len(d) * 1e3:.0f}" if d else "-")
        hd = re.search(r'hd (\d+)/(\d+)', txt)
        w(f"| {rate} | {seed} | {ex['audio']:+.2f} | {ex['ld-video']:+.2f} | " + " | ".join(q) +
          f" | {hd.group(1)}/{hd.group(2)} |\n")
    w("\n")
long_call(w)
w(f"![latency over time](media-latency.png)\n\n`media-latency.png`: delay of each audio and LD-video frame over its send time, bypass + bucket ({cc}), with the floor.\n")
# plot data
with open(f"{tmp}/plot.dat", 'w') as p:
    for fl in ('audio', 'ld-video'):
        for r in csv.DictReader(open(f"{tmp}/bucket-{cc}.frames.csv")):
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
