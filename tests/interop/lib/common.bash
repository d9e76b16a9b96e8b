# SPDX-License-Identifier: MIT
# Shared helpers for tests/interop/*.sh (sourced; not a test itself).
# Usage in a script:  source "$(dirname "$0")/lib/common.bash" "$1"
#
# Each case runs in both directions:
#   q>n  quack get      -> ngtcp2 gtlsserver
#   n>q  gtlsclient     -> quack serve
# and is recorded as PASS, FAIL or SKIP (with a reason) in $RESULTS
# (tab-separated: case, direction, result, detail). Everything binds to
# loopback only. Content is checked byte-exact (sha256) and exit codes must
# be 0 (quack serve must also exit 0 on SIGTERM: no ASan report).

set -u
if [ $# -lt 1 ] || [ ! -x "$1/quack" ]; then
    echo "usage: bash $0 BUILD_DIR (with BUILD_DIR/quack built)" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
Q="$BUILD/quack"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
SCRIPT=$(basename "$0" .sh)
RESULTS=${QK_INTEROP_RESULTS:-$BUILD/interop-results/$SCRIPT.tsv}
mkdir -p "$(dirname "$RESULTS")"
[ -n "${QK_INTEROP_RESULTS:-}" ] || : >"$RESULTS"
WORK=$(mktemp -d /tmp/qk-interop.XXXXXX)
PIDS=()
NFAIL=0
NPASS=0
NSKIP=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ "$NFAIL" -eq 0 ] && [ -z "${QK_INTEROP_KEEP:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

have_peers() {
    command -v gtlsclient >/dev/null && command -v gtlsserver >/dev/null && command -v openssl >/dev/null
}

record() { # case dir result detail
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"
    printf '%-14s %-4s %-4s %s\n' "$1" "$2" "$3" "$4"
    case "$3" in
    PASS) NPASS=$((NPASS + 1)) ;;
    SKIP) NSKIP=$((NSKIP + 1)) ;;
    *) NFAIL=$((NFAIL + 1)) ;;
    esac
}

finish() {
    echo "$SCRIPT: $NPASS passed, $NFAIL failed, $NSKIP skipped (work dir $WORK)"
    [ "$NFAIL" -eq 0 ]
    exit $?
}

# shellcheck source=../../cli/lib/ports.bash
. "$(dirname "${BASH_SOURCE[0]}")/../../cli/lib/ports.bash" # port_in_use, ephemeral_range

# A free port on loopback, outside the kernel's ephemeral range: a port the
# kernel hands out (as this used to) can become the local end of any client's
# socket, another test's included, before our server binds it (ctest -j3 made
# interop/ngtcp2_window fail with EADDRINUSE). Random in 10000..lo-1 (or
# above the range), not in use when picked.
free_port() {
    local lo hi p
    ephemeral_range
    if [ "$EPH_LO" -ge 12000 ]; then lo=10000 hi=$((EPH_LO - 1)); else lo=$((EPH_HI + 1)) hi=65535; fi
    for _ in $(seq 50); do
        p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
        port_in_use "$p" || break
    done
    echo "$p"
}

# After wait_udp: is the server $1 still running 0.2 s later? wait_udp sees
# any socket on the port, also another test's that took free_port's port
# first (ctest -j): then the server has exited (address in use).
server_alive() {
    sleep 0.2
    kill -0 "$1" 2>/dev/null && return 0
    wait "$1" 2>/dev/null
    return 1
}

have_ipv6() {
    python3 -c 'import socket; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::1", 0))' 2>/dev/null
}

# Wait until something listens on UDP port $1 (IPv4 or IPv6), up to 10 s.
wait_udp() {
    local hex
    hex=$(printf '%04X' "$1")
    for _ in $(seq 100); do
        grep -q ":$hex " /proc/net/udp /proc/net/udp6 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# Document root with files name:size ("a.bin:1K" ...). Content is random.
make_root() { # dir spec...
    local dir=$1
    shift
    mkdir -p "$dir"
    for spec in "$@"; do
        local name=${spec%%:*} size=${spec#*:}
        head -c "$size" /dev/urandom >"$dir/$name"
    done
}

# Certificate and key for gtlsserver / quack serve (P-256, CN localhost).
make_cert() {
    [ -f "$WORK/cert.pem" ] && return 0
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 30 -subj /CN=localhost \
        >/dev/null 2>&1
}

# Compare every file of root $1 named in $3.. against directory $2.
same_files() { # root outdir names...
    local root=$1 out=$2
    shift 2
    for n in "$@"; do
        [ -f "$out/$n" ] || {
            echo "missing $n"
            return 1
        }
        local a b
        a=$(sha256sum <"$root/$n" | cut -d' ' -f1)
        b=$(sha256sum <"$out/$n" | cut -d' ' -f1)
        [ "$a" = "$b" ] || {
            echo "$n differs (sha256)"
            return 1
        }
    done
}

# Background processes: started with `bg NAME cmd...`, their pid in $BG_PID.
spawn() { # logname cmd...
    local log=$1
    shift
    "$@" >"$WORK/$log.out" 2>"$WORK/$log.err" &
    BG_PID=$!
    PIDS+=("$BG_PID")
}

# Stop a background quack serve and require a clean exit (0 after SIGTERM).
stop_quack() { # pid log
    kill -TERM "$1" 2>/dev/null
    local rc=0
    wait "$1" 2>/dev/null || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "quack exited $rc: $(grep -m1 -E 'ERROR|runtime error' "$WORK/$2.err" || tail -1 "$WORK/$2.err")"
        return 1
    fi
}

stop_peer() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }

# URLs for host:port and file names.
urls() { # authority names...
    local a=$1
    shift
    for n in "$@"; do printf 'https://%s/%s ' "$a" "$n"; done
}

# Host part for an address string (strips [ ] of IPv6).
host_of() { local h=${1#[}; echo "${h%]}"; }

# One case, quack client -> ngtcp2 server. Options:
#   run_qn NAME ROOT "server opts" "get opts" ADDR files...   (ADDR 127.0.0.1 or [::1])
# Optionally through netem when NETEM_OPTS is set. Prints a failure reason.
run_qn() {
    local name=$1 root=$2 sopts=$3 gopts=$4 addr=$5
    shift 5
    local sp np port out="$WORK/$name.qn.out" rc=0
    make_cert || { echo "openssl failed"; return 1; }
    rm -rf "$out" && mkdir -p "$out"
    local try
    for try in 1 2 3; do # free_port's port may be taken before the server binds it
        port=$(free_port)
        # shellcheck disable=SC2086
        spawn "$name.gtlsserver" gtlsserver -q $sopts -d "$root" "$(host_of "$addr")" "$port" \
            "$WORK/key.pem" "$WORK/cert.pem"
        sp=$BG_PID
        wait_udp "$port" || { stop_peer "$sp"; echo "gtlsserver did not start"; return 1; }
        server_alive "$sp" && break
        [ "$try" = 3 ] && { echo "gtlsserver exited: $(tail -1 "$WORK/$name.gtlsserver.err")"; return 1; }
    done
    local cport=$port
    if [ -n "${NETEM_OPTS:-}" ]; then
        cport=$(free_port)
        # shellcheck disable=SC2086
        spawn "$name.qn.netem" "$Q" netem --listen "$addr:$cport" --to "$addr:$port" $NETEM_OPTS
        np=$BG_PID
        wait_udp "$cport" || { echo "netem did not start"; return 1; }
    fi
    # shellcheck disable=SC2046,SC2086
    timeout "${CASE_TIMEOUT:-60}" "$Q" get --quiet --insecure --output "$out" $gopts \
        $(urls "$addr:$cport" "$@") >"$WORK/$name.qn.get.out" 2>"$WORK/$name.qn.get.err" || rc=$?
    [ -n "${np:-}" ] && stop_peer "$np"
    stop_peer "$sp"
    if [ "$rc" -ne 0 ]; then
        echo "quack get exited $rc: $(grep -m1 -v '^$' "$WORK/$name.qn.get.err")"
        return 1
    fi
    same_files "$root" "$out" "$@"
}

# One case, ngtcp2 client -> quack server (same arguments; opts for
# quack serve and gtlsclient).
run_nq() {
    local name=$1 root=$2 sopts=$3 copts=$4 addr=$5
    shift 5
    local sp np port out="$WORK/$name.nq.out" rc=0
    make_cert || { echo "openssl failed"; return 1; }
    rm -rf "$out" && mkdir -p "$out"
    local try
    for try in 1 2 3; do # free_port's port may be taken before the server binds it
        port=$(free_port)
        # shellcheck disable=SC2086
        spawn "$name.serve" "$Q" serve --quiet --root "$root" --listen "$addr:$port" \
            --cert "$WORK/cert.pem" --key "$WORK/key.pem" $sopts
        sp=$BG_PID
        wait_udp "$port" || { echo "quack serve did not start: $(head -1 "$WORK/$name.serve.err")"; return 1; }
        server_alive "$sp" && break
        [ "$try" = 3 ] && { echo "quack serve exited: $(head -1 "$WORK/$name.serve.err")"; return 1; }
    done
    local cport=$port
    if [ -n "${NETEM_OPTS:-}" ]; then
        cport=$(free_port)
        # shellcheck disable=SC2086
        spawn "$name.nq.netem" "$Q" netem --listen "$addr:$cport" --to "$addr:$port" $NETEM_OPTS
        np=$BG_PID
        wait_udp "$cport" || { echo "netem did not start"; return 1; }
    fi
    # shellcheck disable=SC2046,SC2086
    timeout "${CASE_TIMEOUT:-60}" gtlsclient -q $copts --download "$out" \
        --exit-on-all-streams-close "$(host_of "$addr")" "$cport" $(urls "$addr:$cport" "$@") \
        >"$WORK/$name.nq.client.out" 2>"$WORK/$name.nq.client.err" || rc=$?
    [ -n "${np:-}" ] && stop_peer "$np"
    stop_quack "$sp" "$name.serve" || return 1
    if [ "$rc" -ne 0 ]; then
        echo "gtlsclient exited $rc: $(grep -m1 -v '^$' "$WORK/$name.nq.client.err")"
        return 1
    fi
    same_files "$root" "$out" "$@"
}

# case NAME DIR SKIP_REASON -- function args...: runs and records one cell.
cell() {
    local name=$1 dir=$2 skip=$3
    shift 3
    # QK_INTEROP_ONLY=REGEX runs only the matching cases (by hand; unrecorded).
    if [ -n "${QK_INTEROP_ONLY:-}" ] && ! [[ $name =~ ^(${QK_INTEROP_ONLY})$ ]]; then
        return 0
    fi
    if [ -n "$skip" ]; then
        record "$name" "$dir" SKIP "$skip"
        return 0
    fi
    local t0 t1 why
    t0=$(date +%s%N)
    if why=$("$@" 2>&1); then
        t1=$(date +%s%N)
        record "$name" "$dir" PASS "$(((t1 - t0) / 1000000)) ms"
    else
        record "$name" "$dir" FAIL "$(echo "$why" | tail -1)"
    fi
}
