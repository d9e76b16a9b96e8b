#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_serve.c src/h3/h3.c
# A real browser against quack serve: Debian's headless Chromium loads a page
# with 50 subresources (20 PNG + 10 GIF images, 15 scripts, 3 stylesheets, a
# JSON file and a 20 MiB binary that a script fetches and hashes with
# SHA-256) over HTTP/3, loopback only. tests/interop/chromium/netlog.py then
# checks Chromium's net log: all 51 URLs answered 200 over HTTP/3 (QUIC v1,
# ALPN h3) with the Content-Type of its extension and every body byte read,
# and the page's report (its last request) gives the 20 MiB file's length and
# SHA-256 as served. Usage: bash chromium.sh BUILD_DIR
# QK_CHROMIUM_BIG overrides the big file's size (bytes; default 20 MiB).
source "$(dirname "$0")/lib/common.bash" "$1"

CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ] || ! command -v openssl >/dev/null; then
    echo "SKIP: chromium or openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi

# The browser's SPKI pin: base64(SHA-256(SubjectPublicKeyInfo DER)).
spki_of() { # cert.pem
    openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der |
        openssl dgst -sha256 -binary | base64
}

browser() {
    local site="$WORK/site" port sp cp spki rc=0 origin
    python3 "$SRC/tests/interop/chromium/site.py" "$site" "${QK_CHROMIUM_BIG:-20971520}" \
        >"$WORK/paths.txt" || { echo "site.py failed"; return 1; }
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 30 -subj /CN=localhost \
        -addext subjectAltName=DNS:localhost >/dev/null 2>&1 || { echo "openssl failed"; return 1; }
    spki=$(spki_of "$WORK/cert.pem")
    port=$(free_port)
    origin="https://localhost:$port"
    spawn serve "$Q" serve --root "$site" --listen "127.0.0.1:$port" \
        --cert "$WORK/cert.pem" --key "$WORK/key.pem"
    sp=$BG_PID
    wait_udp "$port" || { echo "quack serve did not start: $(head -1 "$WORK/serve.err")"; return 1; }
    # --user-data-dir: a fresh profile (Chromium ignores the SPKI list without
    # one). --origin-to-force-quic-on: HTTP/3 from the first request, no
    # Alt-Svc over TCP first. HOME and XDG dirs point into the work dir so
    # nothing is written elsewhere. The page's last request is
    # report.txt?RESULTS: wait for it in quack serve's log, then SIGINT (the
    # browser shuts down cleanly and finishes the net log). Not --dump-dom:
    # headless virtual time does not wait for a streaming response body.
    mkdir -p "$WORK/home"
    spawn chromium env HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home" \
        XDG_CACHE_HOME="$WORK/home" timeout --kill-after=5 "${CASE_TIMEOUT:-90}" \
        "$CHROMIUM" --headless=new --no-sandbox --user-data-dir="$WORK/profile" --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-default-apps --disable-extensions --disable-dev-shm-usage --disable-gpu \
        --origin-to-force-quic-on="localhost:$port" \
        --host-resolver-rules="MAP localhost 127.0.0.1" \
        --ignore-certificate-errors-spki-list="$spki" \
        --log-net-log="$WORK/net.json" "$origin/"
    cp=$BG_PID
    for _ in $(seq $((${CASE_TIMEOUT:-90} * 10))); do
        grep -q '^GET /report.txt?' "$WORK/serve.err" && break
        kill -0 "$cp" 2>/dev/null || break
        sleep 0.1
    done
    sleep 1 # the report's response and the net log's last events
    kill -INT "$cp" 2>/dev/null
    wait "$cp" || rc=$?
    stop_quack "$sp" serve || return 1
    grep -q '^GET /report.txt?' "$WORK/serve.err" ||
        { echo "no report from the page (chromium exited $rc; $WORK/chromium.err)"; return 1; }
    # 130: killed by the SIGINT before its handler ran (seen under a loaded
    # make test); the net log must then still be complete: netlog.py parses
    # all of it and fails otherwise.
    [ "$rc" -eq 0 ] || [ "$rc" -eq 130 ] ||
        { echo "chromium exited $rc after SIGINT ($WORK/chromium.err)"; return 1; }
    grep -q '52 files served, 0 error responses' "$WORK/serve.err" ||
        { echo "quack serve: $(tail -1 "$WORK/serve.err")"; return 1; }
    python3 "$SRC/tests/interop/chromium/netlog.py" "$WORK/net.json" "$site" "$origin" \
        "$WORK/paths.txt"
}

"$CHROMIUM" --version 2>/dev/null || true
cell page50 c\>q "" browser
finish
