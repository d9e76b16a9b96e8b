#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP/3 under small flow-control windows against ngtcp2 0.12, both directions.
# The receiver's connection window is 1000 B, 64 KiB,
# 1 MiB or 4 MiB and cannot grow (ngtcp2: --max-window / --max-stream-window
# set to the same value; quack get: --max-data / --max-stream-data are fixed
# windows), x 1 KiB, 1 MiB and 10 MiB responses; then tiny (100 B) stream
# windows on every stream, unidirectional ones included. Every response is
# larger than some window, so the server's control and QPACK streams must get
# credit ahead of the response body (RFC 9204 §2.1.3) or the download hangs.
# Usage: bash ngtcp2_window.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers; then
    echo "SKIP: gtlsclient/gtlsserver/openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi

R="$WORK/root"
make_root "$R" 1k.bin:1024 1m.bin:1048576 10m.bin:10485760
CASE_TIMEOUT=60

# ngtcp2 options for a receive window of $1 (connection) and $2 (streams)
# that stays put: auto-tuning may only grow a window up to --max-*window.
ng_win() {
    echo "--max-data=$1 --max-window=$1 --max-stream-window=$2" \
        "--max-stream-data-bidi-local=$2 --max-stream-data-bidi-remote=$2 --max-stream-data-uni=$2"
}

for w in 1000 64K 1M 4M; do
    for f in 1k 1m 10m; do
        # q>n: quack get receives with fixed windows; gtlsserver's own
        # receive windows (for quack's request and control streams) as small.
        cell "w$w.$f" q\>n "" run_qn "w$w.$f" "$R" "$(ng_win "$w" "$w")" \
            "--max-data $w --max-stream-data $w" 127.0.0.1 "$f.bin"
        cell "w$w.$f" n\>q "" run_nq "w$w.$f" "$R" "" "$(ng_win "$w" "$w")" 127.0.0.1 "$f.bin"
    done
done

# Tiny stream windows (100 B on every stream, the control and QPACK streams
# too) under a 64 KiB connection window.
for f in 1k 1m; do
    cell "s100.$f" q\>n "" run_qn "s100.$f" "$R" "$(ng_win 64K 100)" \
        "--max-data 64K --max-stream-data 100" 127.0.0.1 "$f.bin"
    cell "s100.$f" n\>q "" run_nq "s100.$f" "$R" "" "$(ng_win 64K 100)" 127.0.0.1 "$f.bin"
done

# RFC 9000 §4.1, §19.12-13: quack serve, blocked by the client's credit, says
# so. The qlog names the frame, or (before qlog knows the name) gives its type:
# 0x14 = 20 DATA_BLOCKED, 0x15 = 21 STREAM_DATA_BLOCKED.
has_frame() { # qlog-dir name type
    grep -qE "\"frame_type\":\"$2\"|\"raw_frame_type\":$3[,}]" "$1"/* 2>/dev/null ||
        { echo "no $2 frame in quack's qlog"; return 1; }
}
blocked_stream() {
    mkdir -p "$WORK/sdb.qlog"
    run_nq sdb "$R" "--qlog $WORK/sdb.qlog" "$(ng_win 4M 1000)" 127.0.0.1 1m.bin || return 1
    has_frame "$WORK/sdb.qlog" stream_data_blocked 21
}
blocked_conn() {
    mkdir -p "$WORK/db.qlog"
    run_nq db "$R" "--qlog $WORK/db.qlog" "$(ng_win 64K 4M)" 127.0.0.1 1m.bin || return 1
    has_frame "$WORK/db.qlog" data_blocked 20
}
cell stream_blocked n\>q "" blocked_stream
# DATA_BLOCKED (RFC 9000 §4.1): quack serve blocked by gtlsclient's 64 KiB
# connection window sends it (conn_ctrl.c makes it a reason to send).
DATA_BLOCKED_PENDING=""
cell data_blocked n\>q "$DATA_BLOCKED_PENDING" blocked_conn

finish
