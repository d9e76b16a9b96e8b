#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""TCP ends for tests/cli/tunnel.sh (not a test by itself).

  tunnel_peer.py echo PORT             TCP echo server on 127.0.0.1:PORT (one thread per
                                       connection; echoes until EOF, then half-closes)
  tunnel_peer.py banner PORT N SEED    server that sends N deterministic bytes on connect,
                                       then closes (a protocol where the server speaks first)
  tunnel_peer.py roundtrip PORT N      client: sends N random bytes while reading the echo,
                                       half-closes, prints "ok SHA" when the echo matched
  tunnel_peer.py fetch PORT N SEED     client: reads to EOF, prints "ok SHA" when it got
                                       exactly the banner's N bytes
  tunnel_peer.py sized PORT SEED       server: reads "N\n", sends the first N bytes of a
                                       fixed pattern, closes (a download of any size)
  tunnel_peer.py get PORT N SEED       client of `sized`: asks for N bytes, prints "ok SHA"
                                       when they arrived intact
Exit status 0 on "ok", 1 otherwise.
"""
import hashlib
import os
import random
import socket
import sys
import threading


def pattern(n, seed):
    rnd = random.Random(seed)
    return rnd.randbytes(n)


def serve(port, handler):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handler, args=(c,), daemon=True).start()


def echo_conn(c):
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        c.close()


def read_all(s):
    """Read to EOF: (bytes, sha256 hex)."""
    h = hashlib.sha256()
    got = 0
    while True:
        b = s.recv(65536)
        if not b:
            return got, h.hexdigest()
        h.update(b)
        got += len(b)


def roundtrip(port, n):
    data = os.urandom(n)
    s = socket.create_connection(("127.0.0.1", port), timeout=60)

    def writer():
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    got, digest = read_all(s)
    t.join()
    s.close()
    want = hashlib.sha256(data).hexdigest()
    if got == n and digest == want:
        print("ok", want)
        return 0
    print("mismatch: sent %d bytes (%s), echo %d bytes (%s)" % (n, want, got, digest))
    return 1


def expect(s, n, seed):
    """Read s to EOF; "ok SHA" (0) when it was the first n bytes of pattern seed."""
    got, digest = read_all(s)
    s.close()
    want = hashlib.sha256(pattern(n, seed)).hexdigest()
    if got == n and digest == want:
        print("ok", want)
        return 0
    print("mismatch: want %d bytes (%s), got %d (%s)" % (n, want, got, digest))
    return 1


def fetch(port, n, seed):
    return expect(socket.create_connection(("127.0.0.1", port), timeout=60), n, seed)


def get(port, n, seed):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"%d\n" % n)
    return expect(s, n, seed)


def sized_server(port, seed):
    cache = {}

    def sized_conn(c):
        try:
            req = b""
            while not req.endswith(b"\n"):
                b = c.recv(64)
                if not b or len(req) > 32:
                    return
                req += b
            n = int(req)
            if n not in cache:
                cache[n] = pattern(n, seed)
            c.sendall(cache[n])
            c.shutdown(socket.SHUT_WR)
        except (OSError, ValueError):
            pass
        finally:
            c.close()

    serve(port, sized_conn)


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "echo":
        serve(port, echo_conn)
    elif mode == "banner":
        data = pattern(int(sys.argv[3]), int(sys.argv[4]))

        def banner_conn(c):
            try:
                c.sendall(data)
            finally:
                c.close()

        serve(port, banner_conn)
    elif mode == "roundtrip":
        return roundtrip(port, int(sys.argv[3]))
    elif mode == "fetch":
        return fetch(port, int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "sized":
        sized_server(port, int(sys.argv[3]))
    elif mode == "get":
        return get(port, int(sys.argv[3]), int(sys.argv[4]))
    return 2


if __name__ == "__main__":
    sys.exit(main())
