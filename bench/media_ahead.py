# SPDX-License-Identifier: MIT
"""Where an urgent frame's excess over its floor comes from, for one member of
bench/media.sh's schedule family (called by its member()).

usage: media_ahead.py INI OUT FRAMES_CSV QLOG_DIR > member.ahead

The forward link is modelled as a FIFO at the ini's rate (each datagram
its UDP payload, as the simulator's link counts it), closed during the suspensions
that `quack sim` printed in OUT, fed with the client's packets at their qlog
times. For each audio and LD-video frame, the packet that first carried its
last byte is found (frames of a stream are read in order: one waiting for
credit or behind a late frame shows as time in the sender); what that packet waited behind in the link (datagrams
enqueued before it that leave after the link could first have served it) is
split by what it carried and, for non-urgent data (HD video, the bulk
neighbour), by when it was sent relative to the suspension holding the
frame:

  urgent  audio / LD video written earlier, and the frame's own packets
          (the urgent-only reference's part)
  pre     non-urgent data already in the link when that suspension began
  first   non-urgent data sent in the suspension's first one-way delay: no
          acknowledgement can yet have told any sender that the link stopped
  after   non-urgent data sent later in the suspension: what a sender that
          detected the suspension as early as physics allows would hold
  open    non-urgent data queued ahead of a frame written while the link was open
  sender  time from the write (or from the end of the suspension it was
          written in, which the floor counts) to the first transmission of
          the last byte (pacing, the bypass bucket, stream and connection credit, and the
          frames of the same stream written before it)
  missed  the wait for the end of a later suspension than the one the
          frame was written in (or of one, for a frame written while the
          link was open), when its last byte went out that late

Prints one line: rate owd frames excess model urgent pre first after open
sender missed (ms, averages over the frames; model = the FIFO's excess, for
comparison with the measured one)."""
import csv, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_link  # noqa: E402

ini, out, frames, qdir = sys.argv[1:5]
txt = open(ini).read()
rate = float(re.search(r'rate = (\d+)mbit', txt).group(1)) * 1e6
owd = float(re.search(r'delay = (\d+)ms', txt).group(1)) / 1e3
susp = media_link.suspensions(open(out).read())


def holding(t):
    """The suspension (a, b) holding time t, or None."""
    for a, b in susp:
        if a <= t < b:
            return a, b
        if a > t:
            break
    return None


def resume(t):
    return media_link.resume(susp, t)


# Stream ids of the media flow (src/sim/flow_media.c: client-initiated
# unidirectional streams in this order).
URGENT, HD, BULK = {2, 6}, 10, 14
pk = media_link.sent_packets(qdir)
link = []
for (t, size, st), (_, free) in zip(pk, media_link.service(pk, rate, resume)):
    by = {}
    for sid, _, n in st:
        k = 'u' if sid in URGENT else 'n' if sid in (HD, BULK) else 'c'
        by[k] = by.get(k, 0) + n
    link.append((t, free, size, max(by, key=by.get) if by else 'c'))
# Per stream, the segments of bytes sent for the first time: (first byte,
# end, packet index), increasing (a stream's new data goes out in order;
# what is sent again lies below its highest end so far).
first_tx, high = {}, {}
for i, (_, _, st) in enumerate(pk):
    for sid, off, n in st:
        lo = max(off, high.get(sid, 0))
        if off + n > lo:
            first_tx.setdefault(sid, []).append((lo, off + n, i))
            high[sid] = off + n


def first_sent(sid, end):
    """The packet that first carried byte end - 1 of stream sid, or None."""
    seg = first_tx.get(sid, [])
    lo, hi = 0, len(seg)
    while lo < hi:
        mid = (lo + hi) // 2
        if seg[mid][1] < end:
            lo = mid + 1
        else:
            hi = mid
    return seg[lo][2] if lo < len(seg) and seg[lo][0] < end else None


flow_sid = {'audio': 2, 'ld-video': 6}
end, n = {}, 0
acc = dict(excess=0.0, model=0.0, urgent=0.0, pre=0.0, first=0.0, after=0.0, open=0.0, sender=0.0, missed=0.0)
rows = sorted(csv.DictReader(open(frames)), key=lambda r: (r['flow'], int(r['frame'])))
for r in rows:
    f = r['flow']
    end[f] = end.get(f, 0) + int(r['bytes'])
    i = first_sent(flow_sid[f], end[f]) if f in flow_sid else None
    if i is None:
        continue
    t, dep, _, _ = link[i]
    s, recv = float(r['sent_s']), float(r['recv_s'])
    floor = resume(s) - s + owd
    n += 1
    acc['excess'] += recv - s - floor
    acc['model'] += dep + owd - s - floor
    acc['sender'] += max(0.0, t - resume(s))  # beyond the floor's own wait
    acc['urgent'] += link[i][2] * 8 / rate  # its own last packet
    sp = holding(t)
    ready = resume(t)
    if sp is not None and sp != holding(s):
        acc['missed'] += ready - t
    j = i - 1
    while j >= 0:  # FIFO: departures grow with enqueue order
        tq, dq, sq, kind = link[j]
        j -= 1
        if dq <= ready:
            break
        w = sq * 8 / rate
        if kind == 'u':
            acc['urgent'] += w
        elif kind == 'n':
            if sp is None:
                acc['open'] += w
            elif tq < sp[0]:
                acc['pre'] += w
            elif tq < sp[0] + owd:
                acc['first'] += w
            else:
                acc['after'] += w
n = max(n, 1)
print(int(rate / 1e6), int(owd * 1e3), n,
      ' '.join(f"{acc[k] / n * 1e3:.3f}" for k in ('excess', 'model', 'urgent', 'pre', 'first', 'after', 'open', 'sender', 'missed')))
