# SPDX-License-Identifier: MIT
# iodine baseline for bench/dns.sh (sourced): Debian's iodine (IP over DNS)
# downloading the same 10 MiB through unbound with the same 100 ms RTT.
# iodine's two ends need their own network stacks (a tunnel between two
# addresses of one host would be short-cut over loopback), so the server
# side (iodined, unbound, quack netem, the TCP peer) runs in one network
# namespace and the client in another, joined by a veth pair; nothing
# touches the host's network. iodine's client always talks to port 53, so
# netem listens on 10.99.0.1:53 inside the server namespace.
#
#   iodine_row SIZE CAP_S REP   prints "ok SHA SECONDS" / "partial BYTES SECONDS",
#                               or "skip REASON"

iodine_row() {
    local size=$1 cap=$2 rep=$3 tag=qk$$ pids=()
    command -v iodined >/dev/null && command -v iodine >/dev/null || { echo "skip iodine not installed"; return; }
    [ -c /dev/net/tun ] || { echo "skip no /dev/net/tun"; return; }
    ip netns add "$tag-s" 2>/dev/null || { echo "skip cannot create network namespaces"; return; }
    ip netns add "$tag-c"
    local S="ip netns exec $tag-s" C="ip netns exec $tag-c" dir="$WORK/iodine"
    mkdir -p "$dir"
    ip link add "$tag-vs" type veth peer name "$tag-vc"
    ip link set "$tag-vs" netns "$tag-s"
    ip link set "$tag-vc" netns "$tag-c"
    $S ip addr add 10.99.0.1/30 dev "$tag-vs"
    $S ip link set "$tag-vs" up
    $S ip link set lo up
    $C ip addr add 10.99.0.2/30 dev "$tag-vc"
    $C ip link set "$tag-vc" up
    $C ip link set lo up
    local iport=5353 uport=5354 tport=5355
    $S iodined -f -c -P qkbench -p $iport -l 127.0.0.1 10.53.0.1/27 i.example.com \
        >"$dir/iodined.log" 2>&1 &
    pids+=($!)
    rig_unbound_conf "$dir" "$uport" "$iport" i.example.com no >"$dir/unbound.conf"
    $S unbound -d -c "$dir/unbound.conf" 2>"$dir/unbound.err" &
    pids+=($!)
    $S "$Q" netem --listen 10.99.0.1:53 --to 127.0.0.1:$uport --delay 50ms --limit-pkts 10000 \
        2>"$dir/netem.err" &
    pids+=($!)
    $S env QK_PEER_BIND=0.0.0.0 python3 "$RIG_DIR/peer.py" serve $tport &
    pids+=($!)
    sleep 1
    $C iodine -f -r -P qkbench 10.99.0.1 i.example.com >"$dir/iodine.log" 2>&1 &
    pids+=($!)
    local up=""
    for _ in $(seq 300); do
        $C ip -4 addr show 2>/dev/null | grep -q "10.53.0." && { up=1; break; }
        sleep 0.1
    done
    if [ -n "$up" ]; then
        $C env QK_PEER_HOST=10.53.0.1 python3 "$RIG_DIR/peer.py" get $tport "$size" "$rep" "$cap"
    else
        echo "skip iodine did not connect in 30 s (log: $dir/iodine.log)"
    fi
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait "${pids[@]}" 2>/dev/null
    ip netns del "$tag-c"
    ip netns del "$tag-s"
}
