# SPDX-License-Identifier: MIT
# Shared by tests/cli/install.sh and tests/cli/deb.sh (sourced, not a test):
# builds examples/ against an installed quack through pkg-config and runs
# echo_server + echo_client over loopback, comparing SHA-256 of what was sent
# and what came back. The caller sets tmp, defines ok/no/check, and exports
# PKG_CONFIG_PATH (and PKG_CONFIG_SYSROOT_DIR / LD_LIBRARY_PATH as needed).
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
epid=

stop_echo_server() {
    if [ -n "$epid" ] && kill -0 "$epid" 2>/dev/null; then
        kill -TERM "$epid"
        wait "$epid" 2>/dev/null
    fi
    epid=
}

# build_examples OUTDIR LIBDIR [EXAMPLES_DIR]: make -C EXAMPLES_DIR (default
# the tree's examples/), then check that the binaries need libquack.so.1 and
# resolve it in LIBDIR.
build_examples() {
    local out=$1 libdir=$2 dir=${3:-$src/examples}
    mkdir -p "$out"
    make -s -C "$dir" O="$out" CFLAGS="-O2 -g -Werror" >"$out/make.log" 2>&1
    check "examples (${dir#"$tmp"/}) build against the installed quack.pc (-Werror)" "[ $? -eq 0 ]" ||
        sed 's/^/    /' "$out/make.log"
    check "examples link libquack.so.1" \
        "readelf -d $out/echo_client | grep -q 'NEEDED.*\[libquack.so.1\]' && readelf -d $out/poll_client | grep -q 'NEEDED.*\[libquack.so.1\]'"
    check "examples resolve libquack.so.1 in $libdir" \
        "ldd $out/echo_server | grep -q 'libquack.so.1 => $libdir/libquack.so.1'"
}

# run_echo OUTDIR: server on 127.0.0.1:0, clients for 8 MiB, 0 bytes and a
# wrong pin; poll_client for 8 MiB plus 300 DATAGRAMs and a wrong pin.
run_echo() {
    local out=$1 cert="$tmp/cert.pem" key="$tmp/key.pem"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -keyout "$key" -out "$cert" 2>/dev/null
    local pin bad
    pin=$(openssl x509 -in "$cert" -pubkey -noout | openssl pkey -pubin -outform der |
        sha256sum | cut -d' ' -f1)
    bad=$(printf '%s' "$pin" | tr 0-9a-f 1-9a-f0)
    : >"$tmp/es.out"
    "$out/echo_server" 127.0.0.1:0 "$cert" "$key" >"$tmp/es.out" 2>"$tmp/es.err" &
    epid=$!
    for _ in $(seq 200); do
        grep -q '^listening on' "$tmp/es.out" && break
        sleep 0.05
    done
    local addr
    addr=$(sed -n 's/^listening on //p' "$tmp/es.out")
    if [ -z "$addr" ]; then
        no "echo_server did not start: $(cat "$tmp/es.err")"
        stop_echo_server
        return
    fi
    head -c 8M /dev/urandom >"$tmp/in.bin"
    timeout 60 "$out/echo_client" "$addr" "$pin" <"$tmp/in.bin" >"$tmp/back.bin" 2>"$tmp/ec.err"
    local rc=$? a b
    a=$(sha256sum <"$tmp/in.bin" | cut -d' ' -f1)
    b=$(sha256sum <"$tmp/back.bin" | cut -d' ' -f1)
    check "8 MiB echoed over QUIC: client exits 0 ($rc), SHA-256 ${a:0:16}... = ${b:0:16}..." \
        "[ $rc -eq 0 ] && [ '$a' = '$b' ]"
    # poll_client: its own poll() loop, the stream plus 300 DATAGRAMs echoed.
    mkdir -p "$tmp/pc"
    timeout 60 "$out/poll_client" "$addr" "$pin" 300 "$tmp/pc" <"$tmp/in.bin" >"$tmp/pc/back.bin" \
        2>"$tmp/pc.err"
    rc=$?
    b=$(sha256sum <"$tmp/pc/back.bin" | cut -d' ' -f1)
    local ds de n
    ds=$(sha256sum <"$tmp/pc/dgrams_sent.bin" 2>/dev/null | cut -d' ' -f1)
    de=$(sha256sum <"$tmp/pc/dgrams_echoed.bin" 2>/dev/null | cut -d' ' -f1)
    n=$(stat -c %s "$tmp/pc/dgrams_sent.bin" 2>/dev/null)
    check "poll_client (own poll() loop): exits 0 ($rc), stream SHA-256 ${a:0:16}... = ${b:0:16}..." \
        "[ $rc -eq 0 ] && [ '$a' = '$b' ]" || cat "$tmp/pc.err"
    check "poll_client: 300 DATAGRAMs ($n bytes) echoed, SHA-256 sent ${ds:0:16}... = echoed ${de:0:16}..." \
        "[ '${n:-0}' -gt 100000 ] && [ -n '$ds' ] && [ '$ds' = '$de' ]" || cat "$tmp/pc.err"
    timeout 20 "$out/poll_client" "$addr" "$bad" 0 <"$tmp/in.bin" >"$tmp/pc/back1.bin" 2>/dev/null
    check "poll_client with a wrong pin: refused, exits 1, nothing echoed" \
        "[ $? -eq 1 ] && [ ! -s $tmp/pc/back1.bin ]"
    timeout 20 "$out/echo_client" "$addr" "$pin" </dev/null >"$tmp/back0.bin" 2>"$tmp/ec0.err"
    check "empty input: FIN echoed, exits 0" "[ $? -eq 0 ] && [ ! -s $tmp/back0.bin ]"
    timeout 20 "$out/echo_client" "$addr" "$bad" <"$tmp/in.bin" >"$tmp/back1.bin" 2>"$tmp/ec1.err"
    check "wrong pin: refused, exits 1, nothing echoed" "[ $? -eq 1 ] && [ ! -s $tmp/back1.bin ]"
    kill -TERM "$epid"
    wait "$epid"
    check "echo_server exits 0 on SIGTERM" "[ $? -eq 0 ]"
    epid=
}
