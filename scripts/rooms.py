#!/usr/bin/env python3
"""src/transport/ grouped into rooms by concern (issue 16 item 6). Maps each
old path to its room, moves files (git mv) with --move, and rewrites every
#include "transport/<old>" under src/, tests/, bench/, apps/, examples/ to
the new path (idempotent: run it again after merging a branch that still
uses the flat paths). Usage: rooms.py [--move]"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOMS = {
    "conn": ["conn.c", "conn.h", "conn_recv.c", "conn_send.c", "conn_ctrl.c", "conn_tx.h",
             "conn_flow.c", "qlog.c", "trace.c", "trace.h", "keyupdate.c", "keyupdate.h",
             "session.c"],
    "recovery": ["recovery.c", "recovery.h", "rtt.c", "rtt.h", "pacer.c", "pacer.h", "ack.c",
                 "ack.h", "ackfreq.c", "ackfreq.h", "cc"],
    "streams": ["stream.c", "stream.h", "streams.c", "streams.h", "sendbuf.c", "sendbuf.h",
                "recvbuf.c", "recvbuf.h", "strbuf.c", "strbuf.h", "flow.c", "flow.h",
                "sched.c", "sched.h"],
    "endpoint": ["endpoint.c", "endpoint.h", "cid.c", "stateless.c", "stateless.h", "retry.c"],
    "path": ["path.c", "path.h", "pmtud.c", "pmtud.h", "conn_path.c"],
}
NEW = {old: room + "/" + old for room, olds in ROOMS.items() for old in olds}


def move():
    for old, new in NEW.items():
        src = os.path.join(ROOT, "src", "transport", old)
        if not os.path.exists(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(ROOT, "src", "transport", new)), exist_ok=True)
        subprocess.check_call(["git", "mv", src, os.path.join(ROOT, "src", "transport", new)])


def fix_includes():
    pat = re.compile(r'#include "transport/([A-Za-z0-9_./]+)"')

    def sub(m):
        path = m.group(1)
        first = path.split("/")[0]
        if first in ROOMS:  # already moved
            return m.group(0)
        key = first if first == "cc" else path
        if key in NEW:
            return '#include "transport/%s"' % (NEW[key] + path[len(key):])
        return m.group(0)

    files = []
    for d in ("src", "tests", "bench", "apps", "examples"):
        files += glob.glob(os.path.join(ROOT, d, "**", "*.[ch]"), recursive=True)
    for f in files:
        s = open(f, errors="replace").read()
        n = pat.sub(sub, s)
        if n != s:
            open(f, "w").write(n)


def fix_paths():
    """src/transport/<old> in docs, scripts and tests' covers: lines."""
    names = sorted(NEW, key=len, reverse=True)
    pat = re.compile(r"\bsrc/transport/(%s)\b" % "|".join(re.escape(n) for n in names))
    files = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    files += [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "CMakeLists.txt")]
    for d in ("tests", "scripts", "bench"):
        files += glob.glob(os.path.join(ROOT, d, "**", "*.*"), recursive=True)
    for f in files:
        if not os.path.isfile(f) or f.endswith(".py") and "rooms" in f:
            continue
        try:
            s = open(f).read()
        except UnicodeDecodeError:
            continue
        n = pat.sub(lambda m: "src/transport/" + NEW[m.group(1)], s)
        if n != s:
            open(f, "w").write(n)


if "--move" in sys.argv:
    move()
fix_includes()
fix_paths()
