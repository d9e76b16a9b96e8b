# SPDX-License-Identifier: MIT
# The DNS-carrier rig (sourced by tests/interop/dns.sh and bench/dns.sh):
# a TCP peer, the quack tunnel server as the authoritative server of
# $DOMAIN, Debian's unbound and dnsmasq as recursive resolvers with a stub
# zone / server rule pointing at it, quack netem between the tunnel client
# and the resolver, and the tunnel client. Loopback only; every process is
# recorded in PIDS and killed by rig_cleanup.
#
#   rig_init BUILD_DIR          sets Q, WORK, ports (TPORT SPORT UPORT DPORT NPORT
#                               CPORT NPORT2 NPORT3 UPORT2 XPORT); starts the TCP peer
#   rig_server [ARGS]           tunnel server (DNS on $SPORT), sets PIN
#   rig_unbound PORT [MINIMISE] unbound on PORT (qname-minimisation no|yes)
#   rig_dnsmasq PORT            dnsmasq on PORT
#   rig_netem PORT TO_PORT RTT  quack netem adding RTT (half each way)
#   rig_client RESOLVER_PORT [ARGS]   tunnel client listening on $CPORT
#   rig_get N SEED / rig_put N SEED   transfers through the tunnel (peer.py)

DOMAIN=t.example.com
RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$RIG_DIR/../../cli/lib/ports.bash" # pick_ports, ephemeral_range, wait_udp
PIDS=()

rig_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
}

rig_init() {
    Q="$1/quack"
    WORK=$(mktemp -d /tmp/qk-dns.XXXXXX)
    # Every port the rig's users listen on comes from this one block (a port
    # computed past it, as NPORT + 10 once was, is another test's port).
    pick_ports TPORT SPORT UPORT DPORT NPORT CPORT NPORT2 NPORT3 UPORT2 XPORT
    # TPORT TCP peer, SPORT tunnel server (DNS), UPORT unbound, DPORT dnsmasq,
    # NPORT netem, CPORT tunnel client (TCP); NPORT2, NPORT3 more netem
    # relays, UPORT2 a second unbound, XPORT a resolver port nothing answers on.
    python3 "$RIG_DIR/peer.py" serve "$TPORT" &
    PIDS+=($!)
}

rig_wait_udp() { wait_udp "$1" 50; } # PORT: something has UDP PORT open, within 5 s

rig_server() {
    "$Q" tunnel server --carrier dns --domain "$DOMAIN" --listen 127.0.0.1:"$SPORT" \
        --to 127.0.0.1:"$TPORT" --quiet --stats "$@" >"$WORK/server.out" 2>"$WORK/server.err" &
    SERVER_PID=$!
    PIDS+=($SERVER_PID)
    for _ in $(seq 50); do
        PIN=$(sed -n 's/^pin: \([0-9a-f]*\)$/\1/p' "$WORK/server.out")
        [ -n "$PIN" ] && return 0
        sleep 0.1
    done
    echo "tunnel server did not start:" >&2
    cat "$WORK/server.err" >&2
    return 1
}

# rig_unbound_conf DIR PORT STUB DOMAIN MINIMISE: unbound.conf.in filled in
# on stdout; its outgoing queries stay in the kernel's ephemeral range.
rig_unbound_conf() {
    ephemeral_range
    sed -e "s|@DIR@|$1|g" -e "s|@PORT@|$2|g" -e "s|@STUB@|$3|g" \
        -e "s|@DOMAIN@|$4|g" -e "s|@MINIMISE@|$5|g" \
        -e "s|@EPH_LO1@|$((EPH_LO - 1))|g" -e "s|@EPH_HI1@|$((EPH_HI + 1))|g" "$RIG_DIR/unbound.conf.in"
}

rig_unbound() { # PORT [MINIMISE]
    local port=$1 min=${2:-no} dir="$WORK/unbound-$1"
    mkdir -p "$dir"
    rig_unbound_conf "$dir" "$port" "$SPORT" "$DOMAIN" "$min" >"$dir/unbound.conf"
    unbound -d -c "$dir/unbound.conf" 2>"$dir/stderr" &
    UNBOUND_PID=$!
    PIDS+=($UNBOUND_PID)
    rig_wait_udp "$port" || { cat "$dir/stderr" "$dir/unbound.log" >&2; return 1; }
}

rig_dnsmasq() { # PORT (its forwarded queries leave from the ephemeral range)
    ephemeral_range
    dnsmasq --keep-in-foreground --port="$1" --listen-address=127.0.0.1 --bind-interfaces \
        --no-resolv --no-hosts --no-poll --cache-size=0 --dns-forward-max=4096 \
        --min-port="$EPH_LO" --max-port="$EPH_HI" \
        --server=/"$DOMAIN"/127.0.0.1#"$SPORT" --pid-file="$WORK/dnsmasq.pid" --user=root \
        --log-facility="$WORK/dnsmasq.log" 2>"$WORK/dnsmasq.err" &
    DNSMASQ_PID=$!
    PIDS+=($DNSMASQ_PID)
    rig_wait_udp "$1" || { cat "$WORK/dnsmasq.err" >&2; return 1; }
}

rig_netem() { # PORT TO_PORT RTT_MS
    local half=$(($3 / 2))
    "$Q" netem --listen 127.0.0.1:"$1" --to 127.0.0.1:"$2" --delay "${half}ms" \
        --limit-pkts 10000 2>"$WORK/netem-$1.err" &
    PIDS+=($!)
    rig_wait_udp "$1"
}

rig_client() { # RESOLVER_PORT [ARGS]
    local rport=$1
    shift
    : >"$WORK/client.out"
    "$Q" tunnel client --carrier dns --domain "$DOMAIN" --resolver 127.0.0.1:"$rport" \
        --pin "$PIN" --listen 127.0.0.1:"$CPORT" --quiet --stats "$@" \
        >"$WORK/client.out" 2>"$WORK/client.err" &
    CLIENT_PID=$!
    PIDS+=($CLIENT_PID)
    for _ in $(seq 100); do
        grep -q "listening on" "$WORK/client.out" && return 0
        sleep 0.1
    done
    echo "tunnel client did not connect:" >&2
    cat "$WORK/client.err" >&2
    return 1
}

rig_stop_client() { # the client prints its --stats into $WORK/client.err (kept in clients.log)
    kill -INT "$CLIENT_PID" 2>/dev/null
    wait "$CLIENT_PID" 2>/dev/null
    cat "$WORK/client.err" >>"$WORK/clients.log"
}

rig_get() { timeout "${RIG_TIMEOUT:-120}" python3 "$RIG_DIR/peer.py" get "$CPORT" "$1" "$2"; }
rig_put() { timeout "${RIG_TIMEOUT:-120}" python3 "$RIG_DIR/peer.py" put "$CPORT" "$1" "$2"; }
