#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""UDP relay that records a client's first datagrams and replays them.

For tests/cli/threads.sh (RFC 9001 §9.2, RFC 8446 §8: 0-RTT replay). Listens
on 127.0.0.1:LISTEN, relays one client to 127.0.0.1:SERVER and back, and keeps
the first RECORD datagrams the client sent (its Initial with the ClientHello
and its 0-RTT packets). Once the file DONE exists (the client finished), it
sends the recorded datagrams again to the server from REPLAYS fresh sockets
(new source ports, so the server's SO_REUSEPORT hash spreads them over its
workers), reads answers for a moment, prints "replayed N" and exits. Stops
by itself after 60 s.

usage: replay_udp.py LISTEN SERVER RECORD REPLAYS DONE
"""
import os
import select
import socket
import sys
import time


def main():
    listen, server, record, replays, done = sys.argv[1:6]
    listen, server, record, replays = int(listen), int(server), int(record), int(replays)
    dst = ("127.0.0.1", server)
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", listen))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind(("127.0.0.1", 0))
    client = None
    kept = []
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(done):
        r, _, _ = select.select([front, back], [], [], 0.05)
        if front in r:
            data, client = front.recvfrom(65535)
            if len(kept) < record:
                kept.append(data)
            back.sendto(data, dst)
        if back in r:
            data, _ = back.recvfrom(65535)
            if client:
                front.sendto(data, client)
    socks = []
    for _ in range(replays):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        for d in kept:
            s.sendto(d, dst)
        socks.append(s)
    end = time.time() + 1.0
    while time.time() < end:
        r, _, _ = select.select(socks, [], [], 0.1)
        for s in r:
            s.recvfrom(65535)
    print("replayed %d datagrams from %d ports" % (len(kept), replays), flush=True)


if __name__ == "__main__":
    main()
