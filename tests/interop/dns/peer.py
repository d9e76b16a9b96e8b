#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""TCP ends for the DNS-carrier rig (tests/interop/dns.sh, bench/dns.sh).

  peer.py serve PORT            server on 127.0.0.1:PORT; per connection reads one
                                line: "get N SEED" -> sends N deterministic bytes,
                                closes; "put N" -> reads N bytes, answers with
                                their SHA-256 in hex and a newline
  peer.py get PORT N SEED [MAX_S]  client: prints "ok SHA SECONDS" when it read exactly
                                the N bytes of SEED (then EOF); with MAX_S it stops
                                after that many seconds and prints "partial BYTES SECONDS"
  peer.py put PORT N SEED       client: sends N bytes of SEED, prints "ok SHA SECONDS"
                                when the server's SHA-256 matches
Exit status 0 on "ok", 1 otherwise.
"""
import hashlib
import random
import socket
import sys
import threading
import os
import time

CHUNK = 1 << 16
HOST = os.environ.get("QK_PEER_HOST", "127.0.0.1")  # bench/dns.sh's iodine row: 10.53.0.1


def pattern(n, seed):
    return random.Random(seed).randbytes(n)


def readline(c):
    buf = b""
    while not buf.endswith(b"\n"):
        b = c.recv(1)
        if not b:
            break
        buf += b
    return buf.decode().split()


def handle(c):
    try:
        cmd = readline(c)
        if cmd and cmd[0] == "get":
            c.sendall(pattern(int(cmd[1]), int(cmd[2])))
        elif cmd and cmd[0] == "put":
            left, h = int(cmd[1]), hashlib.sha256()
            while left:
                b = c.recv(min(CHUNK, left))
                if not b:
                    break
                h.update(b)
                left -= len(b)
            c.sendall((h.hexdigest() + "\n").encode())
        c.shutdown(socket.SHUT_WR)
        while c.recv(CHUNK):
            pass
    except OSError:
        pass
    finally:
        c.close()


def serve(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((os.environ.get("QK_PEER_BIND", "127.0.0.1"), port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def connect(port):
    c = socket.create_connection((HOST, port))
    return c, time.monotonic()


def get(port, n, seed, max_s=None):
    want = hashlib.sha256(pattern(n, seed)).hexdigest()
    c, t0 = connect(port)
    c.sendall(f"get {n} {seed}\n".encode())
    h, got = hashlib.sha256(), 0
    if max_s:
        c.settimeout(0.5)
    while True:
        if max_s and time.monotonic() - t0 > max_s:
            print(f"partial {got} {time.monotonic() - t0:.3f}")
            return False
        try:
            b = c.recv(CHUNK)
        except socket.timeout:
            continue
        if not b:
            break
        h.update(b)
        got += len(b)
    dt = time.monotonic() - t0
    ok = got == n and h.hexdigest() == want
    print(("ok" if ok else f"bad got {got} of {n}") + f" {h.hexdigest()} {dt:.3f}")
    return ok


def put(port, n, seed):
    data = pattern(n, seed)
    want = hashlib.sha256(data).hexdigest()
    c, t0 = connect(port)
    c.sendall(f"put {n}\n".encode() + data)
    reply = readline(c)
    dt = time.monotonic() - t0
    ok = bool(reply) and reply[0] == want
    print(("ok" if ok else f"bad reply {reply}") + f" {want} {dt:.3f}")
    return ok


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "serve":
        serve(int(sys.argv[2]))
    elif mode == "get":
        max_s = float(sys.argv[5]) if len(sys.argv) > 5 else None
        sys.exit(0 if get(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), max_s) else 1)
    elif mode == "put":
        sys.exit(0 if put(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])) else 1)
    else:
        sys.exit(__doc__)
