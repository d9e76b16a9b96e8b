# SPDX-License-Identifier: MIT
# Loopback ports for tests that listen: port_in_use, pick_ports, and waits
# until a port listens (wait_until, wait_tcp, wait_udp). Sourced by
# harness.bash, and alone by the tests that need only ports.

# port_in_use PORT: something has PORT as a TCP or UDP port on this host.
port_in_use() {
    local hex
    hex=$(printf '%04X' "$1")
    grep -q ":$hex " /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null
}

# ephemeral_range: sets EPH_LO and EPH_HI to the kernel's ephemeral port
# range (ip_local_port_range; 32768 60999 where it cannot be read).
ephemeral_range() {
    EPH_LO=32768 EPH_HI=60999
    read -r EPH_LO EPH_HI </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
}

# pick_ports NAME...: sets each NAME to a loopback port of its own: a block
# of 10 consecutive ports from this shell's pid (so tests running side by
# side do not share one), moved on while a port of it is in use. The blocks
# lie outside the kernel's ephemeral range (ip_local_port_range): a port in
# it can be taken as the local end of any outgoing connection (a test's own
# hundred echoes, or a neighbour test's) between the pick and the bind, and
# the listener then fails with EADDRINUSE.
pick_ports() {
    [ $# -le 10 ] || { echo "pick_ports: at most 10 ports" >&2; return 1; }
    local _pp_first _pp_last
    ephemeral_range
    if [ "$EPH_LO" -ge 12000 ]; then # below the ephemeral range: 10000..lo-1
        _pp_first=10000 _pp_last=$((EPH_LO - 1))
    else # above it
        _pp_first=$((EPH_HI + 1)) _pp_last=65535
    fi
    local _pp_nblocks=$(((_pp_last - _pp_first + 1) / 10)) _pp_try _pp_k _pp_name
    [ "$_pp_nblocks" -ge 1 ] || { echo "pick_ports: no room outside $EPH_LO-$EPH_HI" >&2; return 1; }
    local _pp_block=$(($$ % _pp_nblocks))
    for _pp_try in $(seq 20); do
        local _pp_base=$((_pp_first + ((_pp_block + _pp_try - 1) % _pp_nblocks) * 10)) _pp_busy=0
        for ((_pp_k = 0; _pp_k < $#; _pp_k++)); do port_in_use $((_pp_base + _pp_k)) && _pp_busy=1; done
        [ $_pp_busy = 0 ] && break
    done
    _pp_k=0
    for _pp_name in "$@"; do
        printf -v "$_pp_name" '%d' $((_pp_base + _pp_k))
        _pp_k=$((_pp_k + 1))
    done
}

# wait_until TENTHS CMD [ARG...]: runs CMD every 0.05 s until it succeeds
# (true) or TENTHS tenths of a second have passed (false).
wait_until() {
    local n=$(($1 * 2))
    shift
    for ((; n > 0; n--)); do
        "$@" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# wait_tcp PORT / wait_udp PORT [TENTHS]: something listens on TCP port PORT
# (state LISTEN) / has UDP port PORT open, within TENTHS/10 s (default 10 s).
tcp_listening() {
    grep -q ":$(printf '%04X' "$1") [0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
udp_open() { grep -q ":$(printf '%04X' "$1") " /proc/net/udp /proc/net/udp6 2>/dev/null; }
wait_tcp() { wait_until "${2:-100}" tcp_listening "$1"; }
wait_udp() { wait_until "${2:-100}" udp_open "$1"; }
