#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""UDP helpers for tests/cli/netem.sh.

  udp_echo.py echo PORT                       echo server on 127.0.0.1:PORT
  udp_echo.py ping PORT COUNT                 minimum RTT in ms (one ping at a time)
  udp_echo.py sink PORT SECONDS               receive for SECONDS, print Mbit/s
  udp_echo.py flood PORT MBIT SECONDS SIZE    paced UDP flood to 127.0.0.1:PORT
  udp_echo.py tos_sink PORT SECONDS           print "notect ect1 ect0 ce" counts received
  udp_echo.py tos_send PORT TOS COUNT         send COUNT datagrams with IP_TOS = TOS at once
"""
import socket
import sys
import time


def echo(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    while True:
        data, addr = s.recvfrom(65535)
        s.sendto(data, addr)


def ping(port, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2.0)
    rtts = []
    for i in range(count):
        msg = b"ping %d" % i
        t = time.monotonic()
        s.sendto(msg, ("127.0.0.1", port))
        while True:
            data, _ = s.recvfrom(65535)
            if data == msg:
                break
        rtts.append((time.monotonic() - t) * 1000)
        time.sleep(0.01)
    # the minimum: scheduling noise on a loaded machine only ever adds delay
    print("%.3f" % min(rtts))


def sink(port, idle_s):
    """Receive until idle_s passes without a datagram after the first one (or
    60 s with none at all): how long the sender takes to start does not cut the
    measurement short on a loaded machine. Prints Mbit/s between the first and
    the last arrival."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("127.0.0.1", port))
    s.settimeout(0.1)
    start = time.monotonic()
    first = last = None
    nbytes = 0
    while True:
        now = time.monotonic()
        if last is None and now - start > 60:
            break
        if last is not None and now - last > idle_s:
            break
        try:
            data = s.recv(65535)
        except socket.timeout:
            continue
        now = time.monotonic()
        if first is None:
            first = now
        else:
            nbytes += len(data)  # bytes after the first arrival over (last - first)
        last = now
    if first is None or last == first:
        print("0")
    else:
        print("%.3f" % (nbytes * 8 / (last - first) / 1e6))


def flood(port, mbit, seconds, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    payload = b"x" * size
    gap = size * 8 / (mbit * 1e6)
    t0 = time.monotonic()
    n = 0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        due = int((now - t0) / gap) + 1
        while n < due:
            try:
                s.sendto(payload, ("127.0.0.1", port))
            except BlockingIOError:
                pass
            n += 1
        time.sleep(0.0005)


def tos_sink(port, idle_s):
    """Count arrivals per ECN codepoint until idle_s passes without one after
    the first (or 60 s with none)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind(("127.0.0.1", port))
    s.settimeout(0.1)
    counts = [0, 0, 0, 0]
    start = time.monotonic()
    last = None
    while True:
        now = time.monotonic()
        if (last is None and now - start > 60) or (last is not None and now - last > idle_s):
            break
        try:
            _, anc, _, _ = s.recvmsg(65535, 64)
        except socket.timeout:
            continue
        last = time.monotonic()
        for level, typ, data in anc:
            if level == socket.IPPROTO_IP and typ == socket.IP_TOS:
                counts[data[0] & 3] += 1
    print(" ".join(str(c) for c in counts))


def tos_send(port, tos, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    for _ in range(count):
        s.sendto(b"y" * 1000, ("127.0.0.1", port))


if __name__ == "__main__":
    cmd = sys.argv[1]
    args = [float(a) if "." in a else int(a) for a in sys.argv[2:]]
    {"echo": echo, "ping": ping, "sink": sink, "flood": flood, "tos_sink": tos_sink,
     "tos_send": tos_send}[cmd](*args)
