#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Session resumption and 0-RTT (RFC 9001 §4.5-4.6) against Debian's ngtcp2
# 0.12 examples and quack itself, loopback only. Each cell connects twice
# with a session file: the first connection stores the ticket (and the
# server's transport parameters), the second resumes and sends its request
# in 0-RTT. Asserted from quack's qlog (packet_type "0RTT", quack:zero_rtt)
# and ngtcp2's log (type=0RTT), bytes compared by sha256.
#   resume q>n    quack get -> gtlsserver
#   resume q>q    quack get -> quack serve
#   resume n>q    gtlsclient --session-file --tp-file -> quack serve
#   rejected q>q  quack serve restarted between the two (new ticket keys):
#                 0-RTT rejected, the request resent in 1-RTT
#   refused n>q   quack serve --no-early-data: resumed, 0-RTT refused
#   resume-threads n>q  gtlsclient, three sessions, against quack serve
#                 --threads 2: 0-RTT accepted each time
# Usage: bash ngtcp2_0rtt.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers; then
    echo "SKIP: gtlsclient/gtlsserver/openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi

R="$WORK/root"
make_root "$R" small.bin:1024 mid.bin:300000

# quack get twice against ADDR:PORT with one session file; qlog dirs get1, get2.
get_twice() { # name port [between-command]
    local name=$1 port=$2 between=${3:-} i rc
    rm -f "$WORK/$name.sess"
    for i in 1 2; do
        [ "$i" = 2 ] && [ -n "$between" ] && { $between || return 1; }
        rm -rf "$WORK/$name.out$i" "$WORK/$name.get$i" && mkdir -p "$WORK/$name.out$i" "$WORK/$name.get$i"
        rc=0
        timeout 30 "$Q" get --insecure --output "$WORK/$name.out$i" --qlog "$WORK/$name.get$i" \
            --session-file "$WORK/$name.sess" "https://127.0.0.1:$port/small.bin" \
            "https://127.0.0.1:$port/mid.bin" >"$WORK/$name.get$i.out" 2>"$WORK/$name.get$i.err" || rc=$?
        [ "$rc" -eq 0 ] || { echo "quack get #$i exited $rc: $(head -1 "$WORK/$name.get$i.err")"; return 1; }
        same_files "$R" "$WORK/$name.out$i" small.bin mid.bin || return 1
        [ "$i" = 1 ] && ! [ -s "$WORK/$name.sess" ] && { echo "no session stored after #1"; return 1; }
    done
    return 0
}

# The second quack get sent 0-RTT and the server accepted it.
client_0rtt_accepted() { # name
    grep -q '"name":"transport:packet_sent","data":{"header":{"packet_type":"0RTT"' "$WORK/$1.get2"/* ||
        { echo "quack get #2 sent no 0-RTT packet (qlog)"; return 1; }
    grep -q '"name":"quack:zero_rtt","data":{"status":"accepted"}' "$WORK/$1.get2"/* ||
        { echo "quack get #2: 0-RTT not accepted (qlog)"; return 1; }
    grep -q '0-RTT accepted' "$WORK/$1.get2.err" || { echo "quack get #2 did not report 0-RTT"; return 1; }
}

start_gtlsserver() { # name port
    make_cert || { echo "openssl failed"; return 1; }
    spawn "$1.gtlsserver" gtlsserver --no-quic-dump --no-http-dump -d "$R" 127.0.0.1 "$2" "$WORK/key.pem" "$WORK/cert.pem"
    GS_PID=$BG_PID
    wait_udp "$2" || { echo "gtlsserver did not start"; return 1; }
}

start_serve() { # name port [opts]
    make_cert || { echo "openssl failed"; return 1; }
    mkdir -p "$WORK/$1.sqlog"
    # shellcheck disable=SC2086
    spawn "$1.serve" "$Q" serve --quiet --root "$R" --listen "127.0.0.1:$2" --cert "$WORK/cert.pem" \
        --key "$WORK/key.pem" --qlog "$WORK/$1.sqlog" ${3:-}
    QS_PID=$BG_PID
    wait_udp "$2" || { echo "quack serve did not start: $(head -1 "$WORK/$1.serve.err")"; return 1; }
}

resume_qn() {
    local port
    port=$(free_port)
    start_gtlsserver resume_qn "$port" || return 1
    get_twice resume_qn "$port" || { stop_peer "$GS_PID"; return 1; }
    stop_peer "$GS_PID"
    client_0rtt_accepted resume_qn || return 1
    # ngtcp2 received the request stream (bidi id 0) in a 0-RTT packet.
    grep -q 'frm rx [0-9]* 0RTT STREAM(0x0[a-f]) id=0x0 ' "$WORK/resume_qn.gtlsserver.err" ||
        { echo "gtlsserver's log shows no request in 0-RTT"; return 1; }
}

resume_qq() {
    local port
    port=$(free_port)
    start_serve resume_qq "$port" || return 1
    get_twice resume_qq "$port" || { stop_quack "$QS_PID" resume_qq.serve; return 1; }
    stop_quack "$QS_PID" resume_qq.serve || return 1
    client_0rtt_accepted resume_qq || return 1
    grep -q '"name":"transport:packet_received","data":{"header":{"packet_type":"0RTT"' \
        "$WORK/resume_qq.sqlog"/* || { echo "quack serve received no 0-RTT packet (qlog)"; return 1; }
}

# Restart quack serve (new ticket keys) between the two connections.
restart_serve() {
    stop_quack "$QS_PID" rejected_qq.serve || return 1
    start_serve rejected_qq "$RJ_PORT"
}

rejected_qq() {
    RJ_PORT=$(free_port)
    start_serve rejected_qq "$RJ_PORT" || return 1
    get_twice rejected_qq "$RJ_PORT" restart_serve || { stop_quack "$QS_PID" rejected_qq.serve; return 1; }
    stop_quack "$QS_PID" rejected_qq.serve || return 1
    grep -q '"packet_type":"0RTT"' "$WORK/rejected_qq.get2"/* ||
        { echo "quack get #2 sent no 0-RTT packet"; return 1; }
    grep -q '"name":"quack:zero_rtt","data":{"status":"rejected"}' "$WORK/rejected_qq.get2"/* ||
        { echo "quack get #2: 0-RTT not reported rejected (qlog)"; return 1; }
    grep -q '0-RTT rejected' "$WORK/rejected_qq.get2.err" || { echo "quack get #2 did not report the rejection"; return 1; }
}

# gtlsclient twice against quack serve (opts); client logs nq.client1/2.
gtls_twice() { # name port
    local name=$1 port=$2 i rc
    rm -f "$WORK/$name.sess" "$WORK/$name.tp"
    for i in 1 2; do
        rm -rf "$WORK/$name.out$i" && mkdir -p "$WORK/$name.out$i"
        rc=0
        timeout 30 gtlsclient --no-quic-dump --no-http-dump --session-file="$WORK/$name.sess" --tp-file="$WORK/$name.tp" \
            --download "$WORK/$name.out$i" --exit-on-all-streams-close 127.0.0.1 "$port" \
            "https://127.0.0.1:$port/small.bin" "https://127.0.0.1:$port/mid.bin" \
            >"$WORK/$name.client$i.out" 2>"$WORK/$name.client$i.err" || rc=$?
        [ "$rc" -eq 0 ] || { echo "gtlsclient #$i exited $rc: $(grep -m1 -v '^$' "$WORK/$name.client$i.err")"; return 1; }
        same_files "$R" "$WORK/$name.out$i" small.bin mid.bin || return 1
        [ "$i" = 1 ] && ! [ -s "$WORK/$name.sess" ] && { echo "gtlsclient stored no session"; return 1; }
    done
    return 0
}

resume_nq() {
    local port
    port=$(free_port)
    start_serve resume_nq "$port" || return 1
    gtls_twice resume_nq "$port" || { stop_quack "$QS_PID" resume_nq.serve; return 1; }
    stop_quack "$QS_PID" resume_nq.serve || return 1
    grep -q 'frm tx [0-9]* 0RTT STREAM(0x0[a-f]) id=0x0 ' "$WORK/resume_nq.client2.err" ||
        { echo "gtlsclient #2 sent no request in 0-RTT"; return 1; }
    grep -q '"name":"transport:packet_received","data":{"header":{"packet_type":"0RTT"' \
        "$WORK/resume_nq.sqlog"/* || { echo "quack serve received no 0-RTT packet (qlog)"; return 1; }
    grep -q '"name":"quack:zero_rtt","data":{"status":"accepted"}' "$WORK/resume_nq.sqlog"/* ||
        { echo "quack serve did not accept 0-RTT (qlog)"; return 1; }
}

# quack serve --threads 2: tickets and the anti-replay store are
# shared by the workers, so gtlsclient resumes with 0-RTT accepted whichever
# worker its 4-tuple hashes to; three sessions (three client ports).
resume_nq_threads() {
    local port k acc
    port=$(free_port)
    start_serve resume_nqt "$port" "--threads 2" || return 1
    for k in 1 2 3; do
        gtls_twice "resume_nqt$k" "$port" || { stop_quack "$QS_PID" resume_nqt.serve; return 1; }
        grep -q 'frm tx [0-9]* 0RTT STREAM(0x0[a-f]) id=0x0 ' "$WORK/resume_nqt$k.client2.err" ||
            { stop_quack "$QS_PID" resume_nqt.serve; echo "gtlsclient $k sent no request in 0-RTT"; return 1; }
    done
    stop_quack "$QS_PID" resume_nqt.serve || return 1
    acc=$(grep -l '"name":"quack:zero_rtt","data":{"status":"accepted"}' "$WORK/resume_nqt.sqlog"/* | wc -l)
    [ "$acc" = 3 ] || { echo "quack serve --threads 2 accepted 0-RTT $acc times, not 3"; return 1; }
}

refused_nq() {
    local port
    port=$(free_port)
    start_serve refused_nq "$port" --no-early-data || return 1
    gtls_twice refused_nq "$port" || { stop_quack "$QS_PID" refused_nq.serve; return 1; }
    stop_quack "$QS_PID" refused_nq.serve || return 1
    # The ticket allowed no early data: gtlsclient resumed without 0-RTT.
    if grep -q 'pkt tx [0-9]* .*type=0RTT' "$WORK/refused_nq.client2.err"; then
        ! grep -q '"status":"accepted"' "$WORK/refused_nq.sqlog"/* ||
            { echo "quack serve --no-early-data accepted 0-RTT"; return 1; }
    fi
    ! grep -q '"packet_type":"0RTT"' "$WORK/refused_nq.sqlog"/* ||
        { echo "quack serve --no-early-data processed a 0-RTT packet"; return 1; }
}

cell resume q\>n "" resume_qn
cell resume q\>q "" resume_qq
cell resume n\>q "" resume_nq
cell resume-threads n\>q "" resume_nq_threads
cell rejected q\>q "" rejected_qq
cell refused n\>q "" refused_nq

finish
