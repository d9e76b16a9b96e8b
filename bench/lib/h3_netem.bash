# SPDX-License-Identifier: MIT
# Shared by bench/loss.sh and bench/zerortt.sh (source it): HTTP/3 downloads
# from quack serve or ngtcp2's gtlsserver through `quack netem`, on loopback.
#   h3_bench_setup NAME BUILD SIZE TOOL...  checks BUILD/quack and the tools,
#       makes the work directory $work (removed at exit with every process in
#       $pids killed), $work/root/f.bin of SIZE random bytes (SHA-256 in
#       $want) and $work/{cert,key}.pem; sets Q=BUILD/quack.
#   start_h3_server quack|ngtcp2 PORT LOG [OPTION...]  sets spid
#   start_netem PORT TO_PORT [OPTION...]                sets npid
#   free_port, wait_udp PORT, median, replace_doc_section

h3_bench_setup() {
    local name=$1 size=$3 t
    Q="$2/quack"
    shift 3
    [ -x "$Q" ] || { echo "$name.sh: $Q missing; run 'make release' first" >&2; exit 1; }
    for t in "$@"; do
        command -v "$t" >/dev/null || { echo "$name.sh: $t missing (scripts/deps.sh)" >&2; exit 1; }
    done
    work=$(mktemp -d "/tmp/qk-$name.XXXXXX")
    pids=()
    trap h3_bench_cleanup EXIT
    mkdir -p "$work/root"
    head -c "$size" /dev/urandom >"$work/root/f.bin"
    want=$(sha256sum <"$work/root/f.bin" | cut -d' ' -f1)
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" \
        -out "$work/cert.pem" -days 30 -subj /CN=localhost >/dev/null 2>&1
}

h3_bench_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}

# A free UDP port on loopback (the kernel picks; tiny race accepted).
free_port() {
    python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_udp PORT: something has UDP port PORT open, within 10 s.
wait_udp() {
    local hex
    hex=$(printf '%04X' "$1")
    for _ in $(seq 100); do
        grep -q ":$hex " /proc/net/udp 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# start_h3_server quack|ngtcp2 PORT LOG [OPTION...]: `quack serve` or
# gtlsserver on 127.0.0.1:PORT serving $work/root with $work/{cert,key}.pem,
# OPTIONs (in that server's syntax) first, output in LOG; sets spid. False
# when the port did not open within 10 s.
start_h3_server() {
    local who=$1 port=$2 log=$3
    shift 3
    if [ "$who" = quack ]; then
        "$Q" serve --quiet "$@" --root "$work/root" --listen "127.0.0.1:$port" \
            --cert "$work/cert.pem" --key "$work/key.pem" >"$log" 2>&1 &
    else
        gtlsserver -q "$@" -d "$work/root" 127.0.0.1 "$port" "$work/key.pem" "$work/cert.pem" \
            >"$log" 2>&1 &
    fi
    spid=$!
    pids+=("$spid")
    wait_udp "$port"
}

# start_netem PORT TO_PORT [OPTION...]: `quack netem` from 127.0.0.1:PORT to
# 127.0.0.1:TO_PORT with OPTIONs (--delay, --loss, --seed ...); sets npid.
# False when the port did not open within 10 s.
start_netem() {
    local port=$1 to=$2
    shift 2
    "$Q" netem --listen "127.0.0.1:$port" --to "127.0.0.1:$to" "$@" >/dev/null 2>&1 &
    npid=$!
    pids+=("$npid")
    wait_udp "$port"
}

# median: of the numbers on stdin, one a line (the mean of the middle two,
# to 2 decimals, for an even count).
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# replace_doc_section DOC NAME SECTION_FILE [append]: replaces the text from
# "<!-- NAME begin" to "<!-- NAME end -->" in DOC by SECTION_FILE's; without
# those markers, appends it when told to, else fails.
replace_doc_section() {
    python3 - "$@" <<'PY'
import re, sys
doc, name, sec = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().rstrip("\n")
append = len(sys.argv) > 4 and sys.argv[4] == "append"
text = open(doc).read()
pat = re.compile(r"<!-- " + re.escape(name) + r" begin.*?<!-- " + re.escape(name) + r" end -->", re.S)
if pat.search(text):
    text = pat.sub(lambda m: sec, text)
elif append:
    text = text.rstrip("\n") + "\n\n" + sec + "\n"
else:
    sys.exit("%s has no %s markers" % (doc, name))
open(doc, "w").write(text)
PY
}
