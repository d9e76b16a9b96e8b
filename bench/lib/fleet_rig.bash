# SPDX-License-Identifier: MIT
# The fleet topology of bench/fleet.sh (source it with tag, tmp, q, mod set):
# network namespaces $tag-lb (a bridge, nginx on 10.38.0.1), $tag-c (the
# clients, 10.38.0.100) and $tag-s1..3 (quack serve on 10.38.0.11..13, each
# with its preferred address on port 4434), one L2 segment of veth pairs.
#   fleet_net          create the namespaces and links
#   fleet_serve N      start servers 1..N (their pids in servers[]), wait for them
#   fleet_nginx N      start nginx balancing 10.38.0.1:4433 over servers 1..N
#   fleet_stop         stop nginx and the servers
#   fleet_cleanup      fleet_stop, delete the namespaces and $tmp
#   cpu_ticks PID...   user + system clock ticks of the processes, summed
servers=()

fleet_net() {
    ip netns add "$tag-lb" 2>/dev/null || { echo "fleet: cannot create network namespaces" >&2; return 1; }
    ip netns exec "$tag-lb" ip link add br0 type bridge
    ip netns exec "$tag-lb" ip link set br0 up
    ip netns exec "$tag-lb" ip link set lo up
    ip netns exec "$tag-lb" ip addr add 10.38.0.1/24 dev br0
    local ns a
    for ns in c s1 s2 s3; do
        case $ns in c) a=10.38.0.100 ;; s*) a=10.38.0.1${ns#s} ;; esac
        ip netns add "$tag-$ns"
        ip link add "$tag-$ns" type veth peer name "$tag-$ns-p"
        ip link set "$tag-$ns" netns "$tag-$ns"
        ip link set "$tag-$ns-p" netns "$tag-lb"
        ip netns exec "$tag-lb" ip link set "$tag-$ns-p" master br0 up
        ip netns exec "$tag-$ns" ip link set lo up
        ip netns exec "$tag-$ns" ip link set "$tag-$ns" up
        ip netns exec "$tag-$ns" ip addr add "$a/24" dev "$tag-$ns"
    done
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' | sed 's/^/key_id = 1\nsecret = /' >"$tmp/fleet.keys"
    local key
    key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    for ns in 1 2 3; do
        printf '[quic-lb]\nconfig_id = 1\nserver_id = 0%d\nnonce_len = 10\nkey = %s\n' "$ns" "$key" \
            >"$tmp/lb$ns.ini"
    done
}

fleet_serve() { # N
    local i
    servers=()
    for i in $(seq "$1"); do
        ip netns exec "$tag-s$i" "$q" serve --root "$tmp/www" --listen "10.38.0.1$i:4433" --quiet \
            --preferred-addr "10.38.0.1$i:4434" --cert "$tmp/id/cert.pem" --key "$tmp/id/key.pem" \
            --lb-config "$tmp/lb$i.ini" --fleet-keys "$tmp/fleet.keys" \
            --max-connections 4096 >"$tmp/s$i.out" 2>"$tmp/s$i.err" &
        servers+=($!)
    done
    for i in $(seq "$1"); do
        for _ in $(seq 100); do grep -q '^listening on' "$tmp/s$i.out" && break; sleep 0.1; done
        grep -q '^listening on' "$tmp/s$i.out" || { echo "fleet: server $i: $(cat "$tmp/s$i.err")" >&2; return 1; }
    done
}

fleet_nginx() { # N
    local i ups=""
    for i in $(seq "$1"); do ups="$ups server 10.38.0.1$i:4433;"; done
    mkdir -p "$tmp/ngx"
    cat >"$tmp/ngx/nginx.conf" <<EOF
load_module $mod;
worker_processes 1;
pid $tmp/ngx/nginx.pid;
error_log $tmp/ngx/error.log warn;
events { worker_connections 8192; }
stream {
    upstream fleet { hash \$remote_addr\$remote_port; $ups }
    server { listen 10.38.0.1:4433 udp; proxy_pass fleet; proxy_timeout 30s; }
}
EOF
    ip netns exec "$tag-lb" nginx -e "$tmp/ngx/error.log" -p "$tmp/ngx" -c "$tmp/ngx/nginx.conf" ||
        { echo "fleet: nginx: $(cat "$tmp/ngx/error.log")" >&2; return 1; }
}

fleet_stop() {
    local p
    if [ -s "$tmp/ngx/nginx.pid" ]; then
        p=$(cat "$tmp/ngx/nginx.pid")
        kill "$p" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        rm -f "$tmp/ngx/nginx.pid"
    fi
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${servers[@]}"; do wait "$p" 2>/dev/null; done
    servers=()
}

fleet_cleanup() {
    fleet_stop
    local ns
    for ns in lb c s1 s2 s3; do ip netns del "$tag-$ns" 2>/dev/null; done
    rm -rf "$tmp"
}

cpu_ticks() { # PID...
    local p t=0
    for p in "$@"; do
        # fields 14 and 15 of /proc/PID/stat (after the parenthesised name)
        t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
    done
    echo "$t"
}
