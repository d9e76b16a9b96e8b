#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ECN interop with ngtcp2's gtlsclient/gtlsserver over loopback:
# quack runs with --ecn (ECT(0), RFC 9000 §13.4.2 validation) and neither side
# may give ECN up. Each side marks at most 10 packets while it tests the path
# and stops marking if the peer's counts fail validation, so:
#   - quack accepted ngtcp2's counts: q>n, quack get's --ecn line says
#     "capable" with more than 10 ECT(0) packets sent; n>q (quack serves),
#     the ACK frames ngtcp2 sends count more than 10 ECT(0) packets of quack's;
#   - ngtcp2 accepted quack's counts: quack received more than 10 ECT(0)
#     packets from it (get's line, or the ACK frames quack sends, from its
#     qlog).
# (q>n cannot use ngtcp2's ACK frames: quack get mostly sends ACK-only
# packets, which ngtcp2 never acknowledges, so its counts stop early.)
# Both directions (q>n: quack get -> gtlsserver, n>q: gtlsclient -> quack
# serve), 1 MiB and 4 MiB bodies checked byte-exact. Usage: bash ngtcp2_ecn.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers; then
    echo "SKIP: gtlsclient/gtlsserver/openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi

R="$WORK/root"
make_root "$R" mid.bin:1048576 four.bin:4194304

# ecn_counts QLOG_DIR -> "peer_ect0 peer_ce our_ect0 our_ce": the largest
# counts in received (peer's) and sent (ours) ACK_ECN frames.
ecn_counts() {
    python3 - "$1" <<'PY'
import json, sys, os
best = {"received": [0, 0], "sent": [0, 0]}
for name in os.listdir(sys.argv[1]):
    with open(os.path.join(sys.argv[1], name), errors="replace") as f:
        for rec in f.read().split("\x1e"):
            rec = rec.strip()
            if not rec.startswith("{"):
                continue
            try:
                ev = json.loads(rec)
            except ValueError:
                continue
            kind = ev.get("name", "").rpartition("packet_")[2]
            if kind not in best:
                continue
            for fr in ev.get("data", {}).get("frames", []):
                if fr.get("frame_type") == "ack" and "ect0" in fr:
                    b = best[kind]
                    b[0] = max(b[0], fr["ect0"])
                    b[1] = max(b[1], fr["ce"])
print(best["received"][0], best["received"][1], best["sent"][0], best["sent"][1])
PY
}

check_ecn() { # qlog-dir
    local c
    c=$(ecn_counts "$1") || { echo "cannot read quack's qlog"; return 1; }
    read -r pe pc oe oc <<<"$c"
    echo "ngtcp2 counted $pe ECT(0) / $pc CE of quack's packets; quack counted $oe / $oc of ngtcp2's"
    [ "$pe" -gt 10 ] || { echo "ngtcp2 reported $pe ECT(0) packets: quack stopped marking (validation failed or never ended)"; return 1; }
    [ "$oe" -gt 10 ] || { echo "quack saw $oe ECT(0) packets from ngtcp2: ngtcp2 stopped marking"; return 1; }
}

ecn_qn() {
    run_qn ecn "$R" "" "--ecn" 127.0.0.1 mid.bin four.bin || return 1
    local line
    line=$(grep -m1 '^ecn: ' "$WORK/ecn.qn.get.err") || { echo "quack get printed no ecn line"; return 1; }
    echo "$line"
    read -r st sent recv <<<"$(sed -n 's/^ecn: \([a-z]*\), sent ect0 \([0-9]*\), received ect0 \([0-9]*\).*/\1 \2 \3/p' <<<"$line")"
    [ "$st" = capable ] || { echo "quack's ECN state is '$st', not capable"; return 1; }
    [ "${sent:-0}" -gt 10 ] || { echo "quack marked only ${sent:-0} packets"; return 1; }
    [ "${recv:-0}" -gt 10 ] || { echo "ngtcp2 marked only ${recv:-0} packets: it gave ECN up"; return 1; }
}
ecn_nq() {
    mkdir -p "$WORK/ecn.nq.qlog"
    run_nq ecn "$R" "--ecn --qlog $WORK/ecn.nq.qlog" "" 127.0.0.1 mid.bin four.bin || return 1
    check_ecn "$WORK/ecn.nq.qlog"
}
cell ecn q\>n "" ecn_qn
cell ecn n\>q "" ecn_nq
finish
