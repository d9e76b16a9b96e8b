#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/tunnel_h3.c apps/h3_site.c
# Active probing: a `quack tunnel server --secret-file S --masquerade DIR`
# must look like `quack serve --root DIR` to anyone without the secret. Both
# run on loopback with the same certificate and directory; then
#  - quack get fetches a page, a stylesheet, a binary, a subdirectory's index
#    and a missing path from each: the same status and byte count, and the
#    same body (SHA-256) for every 200;
#  - Debian's ngtcp2 gtlsclient (h3) fetches the same paths: the same
#    response headers (status, content-type, content-length, server) and
#    bodies;
#  - headless Chromium (tests/interop/chromium.sh's set-up) loads the page,
#    whose script fetches the paths and reports status, content-type and
#    SHA-256 of each in its last request: the same report from both;
#  - a CONNECT without the secret (a tunnel client without --secret-file):
#    both answer 405, and the target behind the tunnel sees nothing.
# Usage: bash tunnel_masquerade.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers; then
    echo "SKIP: gtlsclient/gtlsserver/openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi
CHROMIUM=$(command -v chromium || true)

R="$WORK/site"
make_root "$R" img.bin:300000 data.bin:70000
mkdir -p "$R/sub"
printf 'body { color: #333 }\n' >"$R/style.css"
printf 'a sub page\n' >"$R/sub/index.html"
cat >"$R/index.html" <<'EOF'
<!doctype html><title>probe</title><link rel="stylesheet" href="/style.css">
<script>
(async () => {
  const out = [];
  for (const p of ["/style.css", "/img.bin", "/sub/", "/nothere", "/data.bin"]) {
    const r = await fetch(p, {cache: "no-store"});
    const b = await r.arrayBuffer();
    const h = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)))
      .map(x => x.toString(16).padStart(2, "0")).join("");
    out.push(p + "," + r.status + "," + r.headers.get("content-type") + "," + h);
  }
  await fetch("/report.txt?" + encodeURIComponent(out.join(";")), {cache: "no-store"});
})();
</script>
EOF
PATHS=(/ /style.css /img.bin /sub/ /nothere /data.bin)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" \
    -out "$WORK/cert.pem" -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost \
    >/dev/null 2>&1 || { echo "openssl failed"; exit 1; }
head -c 32 /dev/urandom | base64 >"$WORK/secret"

# The target behind the tunnel counts connections (none may come).
TPORT=$(free_port)
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("conn\n"); c.close()
' "$TPORT" "$WORK/target.log" &
PIDS+=($!)

SPORT=$(free_port)
spawn serve "$Q" serve --root "$R" --listen "127.0.0.1:$SPORT" --cert "$WORK/cert.pem" \
    --key "$WORK/key.pem"
SPID=$BG_PID
UPORT=$(free_port)
spawn tunnel "$Q" tunnel server --listen "127.0.0.1:$UPORT" --to "127.0.0.1:$TPORT" \
    --secret-file "$WORK/secret" --masquerade "$R" --cert "$WORK/cert.pem" --key "$WORK/key.pem"
UPID=$BG_PID
wait_udp "$SPORT" && wait_udp "$UPORT" || { echo "servers did not start"; exit 1; }

# quack get: "URL: STATUS, BYTES bytes" per path, URL dropped; bodies by SHA-256.
get_probe() { # port outdir
    local p
    mkdir -p "$2"
    for p in "${PATHS[@]}"; do
        "$Q" get "https://127.0.0.1:$1$p" --insecure --output "$2" 2>&1 |
            grep -o -E ': [0-9]+, [0-9]+ bytes|HTTP status [0-9]+'
        echo "$p $(cat "$2"/* 2>/dev/null | sha256sum | cut -c1-16)"
        rm -rf "${2:?}"/*
    done
}
case_get() {
    get_probe "$SPORT" "$WORK/get.s" >"$WORK/get.s.txt"
    get_probe "$UPORT" "$WORK/get.u" >"$WORK/get.u.txt"
    grep -q 'HTTP status 404' "$WORK/get.s.txt" || { echo "no 404 for /nothere"; return 1; }
    diff "$WORK/get.s.txt" "$WORK/get.u.txt" >"$WORK/get.diff" || {
        echo "differs: $(head -3 "$WORK/get.diff" | tr '\n' ' ')"
        return 1
    }
}

# gtlsclient: its "http: stream N [name: value]" lines (sorted) and the bodies.
gtls_probe() { # port outdir
    local urls=() p
    for p in "${PATHS[@]:1}"; do urls+=("https://localhost:$1$p"); done # "/" and "/sub/": one name
    mkdir -p "$2"
    timeout 60 gtlsclient --download "$2" --exit-on-all-streams-close 127.0.0.1 "$1" "${urls[@]}" \
        2>&1 >/dev/null | grep '^http: stream .* \[' | grep -v 'date:' | sort
    (cd "$2" && sha256sum -- * | sort)
}
case_gtls() {
    gtls_probe "$SPORT" "$WORK/gt.s" >"$WORK/gt.s.txt"
    gtls_probe "$UPORT" "$WORK/gt.u" >"$WORK/gt.u.txt"
    grep -q 'content-type: text/css' "$WORK/gt.s.txt" || { echo "no headers seen"; return 1; }
    diff "$WORK/gt.s.txt" "$WORK/gt.u.txt" >"$WORK/gt.diff" || {
        echo "differs: $(head -3 "$WORK/gt.diff" | tr '\n' ' ')"
        return 1
    }
}

spki_of() { # cert.pem
    openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der |
        openssl dgst -sha256 -binary | base64
}
# Chromium loads the page from PORT; its report line from the server's log LOG.
chromium_probe() { # name port log
    local cp spki
    spki=$(spki_of "$WORK/cert.pem")
    mkdir -p "$WORK/home.$1"
    spawn "chromium.$1" env HOME="$WORK/home.$1" XDG_CONFIG_HOME="$WORK/home.$1" \
        XDG_CACHE_HOME="$WORK/home.$1" timeout --kill-after=5 60 \
        "$CHROMIUM" --headless=new --no-sandbox --user-data-dir="$WORK/profile.$1" --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-default-apps --disable-extensions --disable-dev-shm-usage --disable-gpu \
        --origin-to-force-quic-on="localhost:$2" --host-resolver-rules="MAP localhost 127.0.0.1" \
        --ignore-certificate-errors-spki-list="$spki" "https://localhost:$2/"
    cp=$BG_PID
    for _ in $(seq 600); do
        grep -q '^GET /report.txt?' "$3" && break
        kill -0 "$cp" 2>/dev/null || break
        sleep 0.1
    done
    kill -INT "$cp" 2>/dev/null
    wait "$cp" 2>/dev/null
    grep -m1 '^GET /report.txt?' "$3" | cut -d' ' -f2
}
case_chromium() {
    local a b
    a=$(chromium_probe s "$SPORT" "$WORK/serve.err")
    b=$(chromium_probe u "$UPORT" "$WORK/tunnel.err")
    [ -n "$a" ] || { echo "no report from the page served by quack serve"; return 1; }
    [[ $a == *%2C404%2C* ]] || { echo "the report lacks the 404: $a"; return 1; }
    [ "$a" = "$b" ] || { echo "reports differ: $a vs $b"; return 1; }
}

# A CONNECT without the secret: what each answers (the tunnel client says).
connect_probe() { # port name
    local lport
    lport=$(free_port)
    timeout 20 "$Q" tunnel client --connect "127.0.0.1:$1" --insecure --listen "127.0.0.1:$lport" \
        --reconnect-max 0 >/dev/null 2>"$WORK/connect.$2.err"
    echo "exit $? $(grep -o 'answered [0-9]*' "$WORK/connect.$2.err")"
}
case_connect() {
    local a b
    a=$(connect_probe "$SPORT" s)
    b=$(connect_probe "$UPORT" u)
    [ "$a" = "exit 3 answered 405" ] || { echo "quack serve: $a"; return 1; }
    [ "$a" = "$b" ] || { echo "quack serve: $a, the tunnel server: $b"; return 1; }
    [ ! -s "$WORK/target.log" ] || { echo "the target got a connection"; return 1; }
}

cell get probe "" case_get
cell gtlsclient probe "" case_gtls
cell chromium probe "$([ -n "$CHROMIUM" ] || echo 'chromium not installed')" case_chromium
cell connect probe "" case_connect
stop_quack "$SPID" serve >"$WORK/stop.txt" && stop_quack "$UPID" tunnel >>"$WORK/stop.txt" ||
    record stop both FAIL "$(cat "$WORK/stop.txt")"
finish
