# SPDX-License-Identifier: MIT
"""The forward link of bench/media.sh's simulator runs, replayed from the
sender's qlog: the two analyses that ask what an urgent frame waited behind
(media.sh's ahead(), per suspension; media_ahead.py, per frame) share it.

The simulator's link (src/sim/link.c) is a FIFO serving each datagram's UDP
payload at the link rate, closed during the suspensions that `quack sim`
prints; a datagram that starts before a suspension finishes in it."""
import glob
import json


def suspensions(out_text, direction='forward'):
    """The suspend_list `quack sim` printed for the link, as (start, end) s."""
    for line in out_text.splitlines():
        if line.startswith(f"suspend_list {direction} = "):
            return sorted(tuple(float(x[:-2]) / 1e3 for x in p.strip().split('-'))
                          for p in line.split('=', 1)[1].split(','))
    raise ValueError(f"no suspend_list {direction} in the simulator's output")


def resume(sp, t):
    """The first time >= t the link is open: the end of the suspension of sp
    (increasing (start, end) pairs) that holds t, else t."""
    for a, b in sp:
        if a <= t < b:
            return b
    return t


def floor(sp, owd, s):
    """The floor of a frame written at s: the wait until the suspension
    holding it ends plus the one-way delay (what a perfect sender sees)."""
    return resume(sp, s) - s + owd


def excess_ms(frames, flow, sp, owd):
    """A flow's average delay over the floor, ms, from frames.csv rows."""
    rs = [r for r in frames if r['flow'] == flow]
    return sum(float(r['recv_s']) - float(r['sent_s']) - floor(sp, owd, float(r['sent_s']))
               for r in rs) / len(rs) * 1e3


def sent_packets(qdir):
    """The client's packets from its qlog in qdir, by send time: (t s, UDP
    payload bytes, [(stream id, offset, length) of each STREAM frame])."""
    pk = []
    for fn in glob.glob(f"{qdir}/*client*"):
        for line in open(fn):
            if 'packet_sent' not in line:
                continue
            e = json.loads(line.strip().lstrip('\x1e'))
            if e['name'] != 'transport:packet_sent':
                continue
            st = [(x['stream_id'], x['offset'], x.get('length', 0))
                  for x in e['data'].get('frames', []) if x['frame_type'] == 'stream']
            pk.append((e['time'] / 1e3, e['data']['raw']['length'], st))
    pk.sort(key=lambda p: p[0])
    return pk


def service(pk, rate_bps, resume):
    """When the FIFO starts and ends serving each packet of pk, (start s,
    end s): in order at rate_bps from max(its send time, the previous end),
    moved past a suspension by resume(t) (the first time >= t the link is
    open)."""
    free, out = 0.0, []
    for t, size, _ in pk:
        start = resume(max(t, free))
        free = start + size * 8 / rate_bps
        out.append((start, free))
    return out
