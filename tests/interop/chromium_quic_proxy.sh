#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/tunnel_h3.c
# Chromium's quic:// proxy scheme against `quack tunnel server` (HTTP/3
# CONNECT, RFC 9114 §4.4; no --secret-file: a browser cannot send our
# proof). Headless Chromium with --proxy-server=quic://127.0.0.1:PORT asks
# for a page of an HTTPS origin (openssl s_server -WWW, the server's --to).
# Two outcomes pass, anything else fails:
#  - the page arrives through the tunnel server (its text equal to the
#    file's): Chromium speaks a CONNECT we serve;
#  - the documented finding (docs/tunnel.md "quack get --proxy and
#    browsers"): the net log shows the quic:// entry dropped when the flags
#    were parsed (no proxy in PROXY_CONFIG_CHANGED, ERR_NO_SUPPORTED_PROXIES)
#    while the same run with an https:// proxy keeps it, and no packet
#    reached the tunnel server.
# Usage: bash chromium_quic_proxy.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

CHROMIUM=$(command -v chromium || true)

browse() { # name proxy url: runs Chromium, its DOM in $WORK/NAME.dom, net log in NAME.json
    mkdir -p "$WORK/home"
    env HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home" XDG_CACHE_HOME="$WORK/home" \
        timeout --kill-after=5 60 "$CHROMIUM" --headless=new --no-sandbox \
        --user-data-dir="$WORK/profile.$1" --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --disable-default-apps --disable-extensions \
        --disable-dev-shm-usage --disable-gpu --proxy-server="$2" --proxy-bypass-list="<-loopback>" \
        --ignore-certificate-errors --log-net-log="$WORK/$1.json" --dump-dom "$3" \
        >"$WORK/$1.dom" 2>"$WORK/$1.err"
}

# netlog FILE: "PROXIES<TAB>ERRORS": the proxies of PROXY_CONFIG_CHANGED and
# the net errors of the requests for localhost.
netlog() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
proxies, errors = set(), set()
for e in d["events"]:
    t, p = names.get(e["type"]), e.get("params") or {}
    if t == "PROXY_CONFIG_CHANGED":
        proxies.update(p.get("new_config", {}).get("single_proxy", []))
    if t == "REQUEST_ALIVE" and "net_error" in p:
        errors.add(str(p["net_error"]))
print(",".join(sorted(proxies)) or "-", ",".join(sorted(errors)) or "-", sep="\t")
PY
}

case_proxy() {
    local hport taddr page="$WORK/www/page.html" got want
    mkdir -p "$WORK/www"
    echo "through quack tunnel server $(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$page"
    make_cert
    hport=$(free_port)
    (cd "$WORK/www" && exec openssl s_server -quiet -WWW -accept "127.0.0.1:$hport" \
        -cert "$WORK/cert.pem" -key "$WORK/key.pem") >"$WORK/https.out" 2>&1 &
    PIDS+=($!)
    XDG_STATE_HOME="$WORK/state" spawn tunnel "$Q" tunnel server --listen 127.0.0.1:0 \
        --to "127.0.0.1:$hport"
    for _ in $(seq 100); do
        grep -q '^listening on' "$WORK/tunnel.out" && break
        sleep 0.1
    done
    taddr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$WORK/tunnel.out")
    [ -n "$taddr" ] || { echo "the tunnel server did not start: $(head -1 "$WORK/tunnel.err")"; return 1; }
    browse quic "quic://$taddr" "https://localhost:$hport/page.html"
    got=$(sed -e 's/<[^>]*>//g' "$WORK/quic.dom" | tr -d '\n')
    want=$(tr -d '\n' <"$page")
    if [ -n "$got" ] && [ "$got" = "$want" ]; then
        echo "Chromium fetched the page through quic://$taddr"
        return 0
    fi
    local q h
    q=$(netlog "$WORK/quic.json") || { echo "no net log from the quic:// run"; return 1; }
    browse https "https://127.0.0.1:9" "https://localhost:$hport/page.html"
    h=$(netlog "$WORK/https.json") || { echo "no net log from the https:// run"; return 1; }
    [ "${q%%	*}" = "-" ] && [[ ${q#*	} == *-336* ]] ||
        { echo "quic:// run: proxies ${q%%	*}, errors ${q#*	} (not the documented finding)"; return 1; }
    [[ ${h%%	*} == *https://127.0.0.1:9* ]] ||
        { echo "https:// control run lost its proxy too: ${h%%	*}"; return 1; }
    grep -q 'CONNECT\|handshake' "$WORK/tunnel.err" &&
        { echo "the tunnel server saw Chromium: $(grep -m1 'CONNECT\|handshake' "$WORK/tunnel.err")"; return 1; }
    echo "finding holds: quic:// dropped at parse (ERR_NO_SUPPORTED_PROXIES), https:// kept"
}

"$CHROMIUM" --version 2>/dev/null || true
cell quic-proxy c\>q "$([ -n "$CHROMIUM" ] || echo 'chromium not installed')" case_proxy
finish
