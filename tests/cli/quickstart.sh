#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's quick starts, run from the README itself so the two cannot
# drift: each ```sh block after a `<!-- quickstart:NAME -->` line is read,
# its comment lines dropped and continuation lines joined, and every
# command run as written after these substitutions (and no others):
#   tunnel.example.org, www.example.org, 0.0.0.0 -> 127.0.0.1
#   ports 4433, 80, 8080 -> loopback ports from pick_ports
#   /etc/letsencrypt/live/NAME/ -> a scratch CA's certificate for 127.0.0.1
#   /srv/www, /tmp/..., $HOME/.local -> scratch directories
#   HEX -> the pin the server printed
#   make install PREFIX=P -> cmake --install BUILD --prefix P (what the
#     Makefile's install target runs, on a tree built already)
#   app.c -> examples/echo_client.c
# `quack` is BUILD_DIR/quack. `quack get` runs in a private mount namespace
# where the scratch CA is the system's CA bundle, so it verifies the chain
# and the name as it would for a real certificate (without namespaces it
# pins the key instead, said on the output). A command line starting with
# `quack serve` or `quack tunnel server|client` runs in the background
# until its "listening on" line; any other must exit 0 within 60 s.
# Then: transfers compared by SHA-256, the sim tables checked.
# Usage: tests/cli/quickstart.sh BUILD_DIR   (the library block installs
# from $QK_INSTALL_BUILD, as tests/cli/install.sh does, or from BUILD_DIR
# when it is a build without sanitizers; else it is skipped)
set -uo pipefail
build=$(cd "${1:?usage: quickstart.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib/harness.bash" # q, tmp, pids, ok/no/check, pick_ports, wait_*, listen_pin
src=$(cd "$(dirname "$0")/../.." && pwd)
readme=$src/README.md
pick_ports port_tun port_www port_cli port_h3 port_echo
for tool in openssl curl; do
    command -v $tool >/dev/null || {
        echo "skip - $tool not installed"
        exit 0
    }
done
sha() { sha256sum "$1" | cut -d' ' -f1; }

# block NAME: the commands of the README's quickstart:NAME block, one a line.
block() {
    awk -v m="<!-- quickstart:$1 -->" '
        $0 == m { want = 1; next }
        want == 1 && /^```/ { want = 2; next }
        want == 2 && /^```/ { exit }
        want == 2 { print }' "$readme" |
        sed -e ':a' -e '/\\$/{N; s/[[:space:]]*\\\n[[:space:]]*/ /; ba}' | grep -v '^[[:space:]]*\(#.*\)\?$'
}

# run_block NAME DIR SED_SCRIPT: the block's commands, substituted, in DIR.
# Sets pin from a server's "pin: HEX"; fails (counted) at the first command
# that fails. Assignments and exports run in this shell.
pin=
run_block() {
    local name=$1 dir=$2 line out err p rc failed=0
    block "$name" | sed "$3" >"$tmp/$name.cmds"
    [ -s "$tmp/$name.cmds" ] || {
        no "README.md has a quickstart:$name block"
        return 1
    }
    mkdir -p "$dir"
    pushd "$dir" >/dev/null || return 1
    local n=0
    while IFS= read -r -u 3 line; do
        n=$((n + 1))
        line=${line//HEX/$pin}
        out=$tmp/$name.$n.out err=$tmp/$name.$n.err
        if [[ $line =~ ^quack\ (serve|tunnel\ server|tunnel\ client)\  ]]; then
            eval "$line" </dev/null >"$out" 2>"$err" &
            pids+=($!)
            if ! wait_line "$out" 'listening on' 300; then
                no "$name: '$line' did not start listening: $(tail -3 "$err")"
                failed=1
                break
            fi
            [[ $line == *server* ]] && pin=$(listen_pin "$out")
        elif [[ $line =~ ^(export\ |[A-Za-z_][A-Za-z0-9_]*=[^\ ]*$) ]]; then
            eval "$line"
        else
            eval "$line" </dev/null >"$out" 2>"$err" &
            p=$!
            wait_gone "$p" 600 || kill "$p"
            wait "$p"
            rc=$?
            if [ $rc -ne 0 ]; then
                no "$name: '$line' exits $rc: $(tail -3 "$err")"
                failed=1
                break
            fi
        fi
        ok "$name: $line"
    done 3<"$tmp/$name.cmds"
    popd >/dev/null || return 1
    [ $failed -eq 0 ]
}
stop_servers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait "${pids[@]}" 2>/dev/null
    pids=()
}

# The README's Docs list names every page of docs/ (and docs/experiments/),
# and every relative link of README.md and docs/status.md leads to a file.
missing=
for f in "$src"/docs/*.md "$src"/docs/experiments/*.md; do
    grep -q "](${f#"$src"/})" "$readme" || missing="$missing ${f#"$src"/}"
done
check "README.md links every docs/ page${missing:+ (not:$missing)}" "[ -z '$missing' ]"
dead=
for page in README.md docs/status.md; do
    for l in $(grep -o '](\([^)#:]*\)' "$src/$page" | sed 's/^](//'); do
        [ -e "$(dirname "$src/$page")/$l" ] || dead="$dead $page:$l"
    done
done
check "the relative links of README.md and docs/status.md resolve${dead:+ (not:$dead)}" "[ -z '$dead' ]"

# A scratch CA and a certificate for 127.0.0.1 signed by it (fullchain.pem
# = certificate + CA, privkey.pem, as certbot lays them out).
mkdir -p "$tmp/ca" "$tmp/cert" "$tmp/bin"
(
    cd "$tmp/ca" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj /CN=quickstart-ca -keyout ca.key -out ca.pem &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
            -keyout "$tmp/cert/privkey.pem" -out leaf.csr &&
        printf 'subjectAltName=IP:127.0.0.1\n' >ext &&
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile ext -out leaf.pem &&
        cat leaf.pem ca.pem >"$tmp/cert/fullchain.pem"
) >"$tmp/openssl.log" 2>&1 || {
    no "openssl made the scratch CA: $(tail -3 "$tmp/openssl.log")"
    exit 1
}

# `quack` on PATH; `quack get` with the CA as the system bundle where a
# private mount namespace can be had.
bundle=/etc/ssl/certs/ca-certificates.crt
ns=
for try in "unshare --mount --propagation private" \
    "unshare --user --map-root-user --mount --propagation private"; do
    if [ -f $bundle ] && $try sh -c "mount --bind $tmp/ca/ca.pem $bundle" 2>/dev/null; then
        ns=$try
        break
    fi
done
cat >"$tmp/bin/quack" <<EOF
#!/usr/bin/env bash
if [ "\$1" = get ] && [ -n "$ns" ]; then
    exec $ns sh -c 'mount --bind "\$0" $bundle && exec "\$@"' $tmp/ca/ca.pem "$q" "\$@"
fi
exec "$q" "\$@"
EOF
chmod +x "$tmp/bin/quack"
export PATH="$tmp/bin:$PATH"
[ -n "$ns" ] || echo "note: no mount namespace here: quack get pins the server key (--pin) instead of trusting the scratch CA"

mkdir -p "$tmp/www"
head -c 2000000 /dev/urandom >"$tmp/www/index.html"
(cd "$tmp/www" && exec python3 -m http.server --bind 127.0.0.1 "$port_www") >/dev/null 2>&1 &
www_pid=$!
wait_tcp "$port_www" || no "the web server did not listen on $port_www"

common='s|tunnel\.example\.org|127.0.0.1|g; s|www\.example\.org|127.0.0.1|g; s|0\.0\.0\.0:|127.0.0.1:|g
s|/etc/letsencrypt/live/[^/]*/|'"$tmp"'/cert/|g; s|/srv/www|'"$tmp"'/www|g'

# 1. The tunnel: TCP to the web server through it.
if run_block tunnel "$tmp/tunnel" "$common"'
s|127\.0\.0\.1:4433|127.0.0.1:'"$port_tun"'|g; s|127\.0\.0\.1:80\b|127.0.0.1:'"$port_www"'|g
s|127\.0\.0\.1:8080|127.0.0.1:'"$port_cli"'|g'; then
    check "tunnel: curl through it fetched 2 MB, SHA-256 equal" \
        "[ -f $tmp/tunnel/index.html ] && [ $(sha "$tmp/www/index.html") = \$(sha $tmp/tunnel/index.html) ]"
    cpin=$(openssl x509 -in "$tmp/cert/fullchain.pem" -pubkey -noout | openssl pkey -pubin -outform der |
        sha256sum | cut -d' ' -f1)
    check "tunnel: the pin the server printed ($pin) is the README's openssl pipeline's" "[ '$pin' = '$cpin' ]"
fi
stop_servers

# 2. HTTP/3: the certificate verified by the system CAs (the scratch CA in
# the namespace), then by pin.
h3_sed="$common"'
s|127\.0\.0\.1:4433|127.0.0.1:'"$port_h3"'|g'
[ -n "$ns" ] || h3_sed="$h3_sed"'
/^quack get https/s|^quack get |quack get --pin HEX |'
if run_block http3 "$tmp/http3" "$h3_sed"; then
    check "http3: quack get fetched index.html, SHA-256 equal" \
        "[ -f $tmp/http3/index.html ] && [ $(sha "$tmp/www/index.html") = \$(sha $tmp/http3/index.html) ]"
    check "http3: quack get --pin fetched index.html, SHA-256 equal" \
        "[ -f $tmp/http3/pinned/index.html ] && [ $(sha "$tmp/www/index.html") = \$(sha $tmp/http3/pinned/index.html) ]"
    if [ -n "$ns" ]; then
        mkdir -p "$tmp/neg"
        "$q" get --output "$tmp/neg" "https://127.0.0.1:$port_h3/index.html" >/dev/null 2>"$tmp/neg.err"
        check "http3: outside the namespace the same certificate is untrusted (so the CA verified it)" \
            "[ $? -ne 0 ] && grep -q 'untrusted certificate' $tmp/neg.err"
    fi
fi
stop_servers

# 3. The simulator, from the source tree (the scenario path is relative).
sim_sed='s|/tmp/bulk|'"$tmp"'/bulk|g'
command -v gnuplot >/dev/null || {
    echo "note: gnuplot not installed: bench/plot.sh not run"
    sim_sed="$sim_sed"'
/plot\.sh/d'
}
if run_block sim "$src" "$sim_sed"; then
    o=$tmp/sim.1.out
    check "sim: the flow table's header" "grep -q '^flow  *type  *sent_B  *recv_B  *goodput .* done_s' $o"
    check "sim: the 50 MiB QUIC download arrived whole ($(grep -m1 '^bulk' "$o" | cut -c1-70))" \
        "grep -q '^bulk  *quic  *52428800  *52428800 ' $o && ! grep -q MISMATCH $o"
    check "sim: the link table" "grep -q '^link  *deliv_pkt' $o && grep -q '^forward ' $o && grep -q '^return ' $o"
    check "sim: CSV series with their headers" \
        "head -1 $tmp/bulk/link_forward.csv | grep -q '^time_s,queue_bytes' && head -1 $tmp/bulk/flow_bulk.csv | grep -q '^time_s,recv_bytes'"
    command -v gnuplot >/dev/null && check "sim: bench/plot.sh drew sim.png" "[ -s $tmp/bulk/sim.png ]"
fi

# 4. The library: install, build against quack.pc, echo through the
# README's cc line (built from echo_client.c) and the examples' server.
from=${QK_INSTALL_BUILD:-}
if [ -z "$from" ] && [ -f "$build/libquack.so.1" ] && grep -q '^QK_SANITIZE:BOOL=OFF' "$build/CMakeCache.txt"; then
    from=$build
fi
if [ -z "$from" ]; then
    echo "skip - library block: no QK_INSTALL_BUILD and $build has sanitizers (make test sets it)"
elif run_block library "$tmp/library" 's|make install PREFIX=\([^ ]*\)|cmake --install '"$from"' --prefix \1|
s|\$HOME/\.local|'"$tmp"'/prefix|g; s|/tmp/ex|'"$tmp"'/ex|g; s|-C examples|-C '"$src"'/examples|
s|^cc app\.c|cc '"$src"'/examples/echo_client.c|'; then
    "$tmp/ex/echo_server" "127.0.0.1:$port_echo" "$tmp/cert/fullchain.pem" "$tmp/cert/privkey.pem" \
        >"$tmp/echo.out" 2>"$tmp/echo.err" &
    pids+=($!)
    if wait_udp "$port_echo"; then
        epin=$(openssl x509 -in "$tmp/cert/fullchain.pem" -pubkey -noout | openssl pkey -pubin -outform der |
            sha256sum | cut -d' ' -f1)
        timeout 60 "$tmp/library/a.out" "127.0.0.1:$port_echo" "$epin" <"$tmp/www/index.html" >"$tmp/echoed"
        check "library: the cc-built echo_client echoed 2 MB through echo_server, SHA-256 equal" \
            "[ $? -eq 0 ] && [ $(sha "$tmp/www/index.html") = \$(sha $tmp/echoed) ]"
    else
        no "library: echo_server did not listen: $(tail -3 "$tmp/echo.err")"
    fi
    stop_servers
fi
kill "$www_pid" 2>/dev/null
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
