#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check Chromium's net log (--log-net-log) and dumped DOM after it loaded
the page of site.py from quack serve.

Usage: netlog.py NET_JSON SITE_DIR ORIGIN PATHS_FILE
  ORIGIN      https://localhost:PORT
  PATHS_FILE  the 51 paths site.py printed

Asserts, from the net log (event names looked up in its constants table):
  - every URL request to ORIGIN is one of the 51 paths, and each of the 51
    was requested;
  - each got response headers with status 200 and the Content-Type of its
    extension, and the body bytes it read equal the file's size;
  - each was bound to a QUIC session (HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION)
    that negotiated QUIC v1 with HTTP/3 (ALPN h3 is the only one RFC 9114 §3.1
    defines for v1; quack serve offers nothing else) to localhost:PORT,
    received the server's HTTP/3 SETTINGS and decoded a ":status: 200" header
    section for each request;
  - the server never closed a session (no QUIC_SESSION_CLOSED from_peer);
and from the page's report (its last request, report.txt?RESULTS, also 200
over HTTP/3): the 20 MiB file's length and SHA-256 computed by the page's
script match the served file, all 30 images decoded, all 14 plain scripts
ran, the JSON was read.
Prints one line per failure and a summary; exits 1 on any failure."""
import collections
import json
import os
import re
import sys


# What quack serve must label each kind of file (RFC 9110 §8.3).
TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript",
         ".png": "image/png", ".gif": "image/gif", ".json": "application/json",
         ".bin": "application/octet-stream", ".txt": "text/plain; charset=utf-8"}


def load_netlog(path):
    text = open(path).read()
    try:
        return json.loads(text)
    except ValueError:
        # A net log cut short (browser killed) lacks the closing "]}" and
        # may end inside an event: keep the events up to the last whole one.
        return json.loads(text[:text.rfind("},\n") + 1] + "]}")


def main():
    net_path, site, origin, paths_file = sys.argv[1:5]
    port = int(origin.rsplit(":", 1)[1])
    paths = open(paths_file).read().split("\n")[:51]  # index.html is ""
    expect_urls = {origin + "/" + p: p for p in paths}
    d = load_netlog(net_path)
    c = d["constants"]
    ev_name = {v: k for k, v in c["logEventTypes"].items()}
    src_name = {v: k for k, v in c["logSourceType"].items()}
    by_src = collections.defaultdict(list)
    for e in d["events"]:
        by_src[e["source"]["id"]].append((ev_name.get(e["type"], "?"), e.get("params") or {}, e))
    fails = []

    # QUIC sessions: id -> facts.
    sessions = {}
    for sid, evs in by_src.items():
        if not evs or src_name.get(evs[0][2]["source"]["type"]) != "QUIC_SESSION":
            continue
        s = {"host": None, "port": None, "versions": set(), "settings": False, "status200": 0,
             "peer_close": None}
        for name, p, _ in evs:
            if name == "QUIC_SESSION" and "host" in p:
                s["host"], s["port"] = p.get("host"), p.get("port")
            elif name == "QUIC_SESSION_VERSION_NEGOTIATED":
                s["versions"].add(p.get("version"))
            elif name == "HTTP3_SETTINGS_RECEIVED":
                s["settings"] = True
            elif name == "HTTP3_HEADERS_DECODED" and ":status: 200" in p.get("headers", []):
                s["status200"] += 1
            elif name == "QUIC_SESSION_CLOSED" and p.get("from_peer"):
                s["peer_close"] = p
        sessions[sid] = s

    report = origin + "/report.txt?"
    reports = []
    seen = collections.Counter()
    used_sessions = collections.Counter()
    for sid, evs in by_src.items():
        urls = [p["url"] for n, p, _ in evs if n == "URL_REQUEST_START_JOB" and "url" in p]
        if not urls or not urls[0].startswith(origin + "/"):
            continue
        url = urls[0]
        if url not in expect_urls and not url.startswith(report):
            fails.append("unexpected request %s" % url)
            continue
        path = expect_urls.get(url, "report.txt")
        if url.startswith(report):
            reports.append(url[len(report):])
        else:
            seen[path] += 1
        heads = [p["headers"] for n, p, _ in evs if n == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS"]
        if not heads or not re.match(r"HTTP/\S+ 200\b", heads[-1][0]):
            fails.append("%s: status line %r" % (url, heads[-1][0] if heads else None))
        ctype = [h.split(":", 1)[1].strip() for h in (heads[-1] if heads else [])
                 if h.lower().startswith("content-type:")]
        want_type = TYPES[os.path.splitext(path)[1] or ".html"]
        if ctype != [want_type]:
            fails.append("%s: content-type %s (want %s)" % (url, ctype, want_type))
        errs = [p["net_error"] for n, p, _ in evs if "net_error" in p]
        if errs:
            fails.append("%s: net_error %s" % (url, errs))
        got = sum(p.get("byte_count", 0) for n, p, _ in evs if n == "URL_REQUEST_JOB_FILTERED_BYTES_READ")
        size = os.path.getsize(os.path.join(site, path or "index.html"))
        if got != size:
            fails.append("%s: read %d bytes, file has %d" % (url, got, size))
        qs = [p["source_dependency"]["id"] for n, p, _ in evs
              if n == "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION"]
        if not qs:
            fails.append("%s: not bound to a QUIC session (not HTTP/3)" % url)
            continue
        s = sessions.get(qs[-1])
        used_sessions[qs[-1]] += 1
        if not s:
            fails.append("%s: QUIC session %d not in the log" % (url, qs[-1]))
        elif s["versions"] != {"RFCv1"} or not s["settings"]:
            fails.append("%s: session %d versions %s, HTTP/3 SETTINGS %s" %
                         (url, qs[-1], sorted(s["versions"]), s["settings"]))
        elif s["host"] != "localhost" or s["port"] != port:
            fails.append("%s: session to %s:%s" % (url, s["host"], s["port"]))

    for p in paths:
        if seen[p] != 1:
            fails.append("/%s requested %d times (want 1)" % (p, seen[p]))
    n200 = 0
    for sid, n in used_sessions.items():
        s = sessions.get(sid)
        if not s:
            continue
        n200 += s["status200"]
        if s["peer_close"]:
            fails.append("session %d closed by quack serve: %s" % (sid, s["peer_close"]))
    if n200 != len(paths) + len(reports):
        fails.append("HTTP/3 ':status: 200' header sections decoded: %d (want %d)" %
                     (n200, len(paths) + len(reports)))

    exp = json.load(open(os.path.join(site, "expect.json")))
    want = {
        "big": "200_%d_%s" % (exp["big_len"], exp["big_sha256"]),
        "images": "30_30",
        "scripts": "14",
        "json": "quack_50",
    }
    if len(reports) != 1:
        fails.append("the page reported %d times (want once): %s" % (len(reports), reports))
    got = dict(kv.split("=", 1) for kv in (reports[0] if reports else "").split("&") if "=" in kv)
    for k, v in want.items():
        if got.get(k) != v:
            fails.append("page report %s=%r (want %r)" % (k, got.get(k), v))

    for f in fails:
        print("FAIL: " + f)
    print("net log: %d of %d URLs requested, %d failures, %d QUIC session(s); page report %s" %
          (sum(1 for p in paths if seen[p]), len(paths), len(fails), len(used_sessions),
           reports[0] if reports else None))
    return 1 if fails else 0


sys.exit(main())
