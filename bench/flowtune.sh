#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Flow-control auto-tuning experiments (docs/experiments/flow-control.md).
# Runs bench_flowtune (Release build) for each experiment, writes CSV series
# and summary lines to OUT, and PNG plots with gnuplot.
# usage: bench/flowtune.sh [BUILD_DIR (build/release)] [OUT (build/flowtune)] [EXPERIMENTS (1 2 3 4 5)]
set -euo pipefail
build=${1:-build/release}
out=${2:-build/flowtune}
which=${3:-1 2 3 4 5}
here=$(cd "$(dirname "$0")" && pwd)
b="$build/bench_flowtune"
[ -x "$b" ] || { echo "flowtune.sh: $b missing; run 'make release' first" >&2; exit 1; }
mkdir -p "$out"
# The null packet protection and 1452-byte datagrams: the windows are under
# test, not the cipher (docs/experiments/flow-control.md, "Cost").
common=(--null --udp-payload 1452 --interval 100ms)
run() { # NAME args...
    local name=$1
    shift
    echo "== $name: $*" >&2
    "$b" "${common[@]}" --csv "$out/$name.csv" "$@" | tee "$out/$name.txt"
}
plot() { # PNG TITLE "files" "names"
    gnuplot -e "out='$1'; title='$2'; files='$3'; names='$4'" "$here/plot/flowtune.gp"
}
for e in $which; do
    case $e in
    1) # The seed: 5 Gbit/s, 60 ms, 1-BDP queue, 20 s.
        run e1-fixed256k --rate 5gbit --rtt 60ms --duration 20s --autotune off --window 256KiB \
            --conn-window 16MiB
        for r in rtt2 epoch rtt2-double; do
            run e1-auto-$r --rate 5gbit --rtt 60ms --duration 20s --rule $r --window 64KiB \
                --conn-window 256KiB --max-window 256MiB --max-conn-window 384MiB
        done
        plot "$out/e1.png" "5 Gbit/s, 60 ms, 1-BDP queue" \
            "$out/e1-fixed256k.csv $out/e1-auto-rtt2.csv $out/e1-auto-epoch.csv $out/e1-auto-rtt2-double.csv" \
            "fixed-256K rtt2 epoch rtt2-double"
        ;;
    2) # A short path: 1 Gbit/s, 1 ms.
        for r in rtt2 epoch rtt2-double; do
            run e2-$r --rate 1gbit --rtt 1ms --duration 10s --rule $r --window 64KiB --conn-window 256KiB
        done
        plot "$out/e2.png" "1 Gbit/s, 1 ms, 1-BDP queue" \
            "$out/e2-rtt2.csv $out/e2-epoch.csv $out/e2-rtt2-double.csv" "rtt2 epoch rtt2-double"
        ;;
    3) # 100 streams under a 64 MiB endpoint budget, 1 Gbit/s, 60 ms. The
        # headline run moves 2,500 MB (~20 s, like experiment 1) so that the
        # handshake and slow start (0.66 s) do not dominate; the 1,000 MB run
        # (~9 s) is kept for comparison with session 1.
        for sz in 2500 1000; do
            run e3-100streams-${sz}MB --rate 1gbit --rtt 60ms --streams 100 --size ${sz}MB \
                --window 64KiB --conn-window 256KiB --budget 64MiB
            # The ceiling: windows that never limit (no tuning, no budget);
            # what slow start and the handshake alone leave of the link.
            run e3-unlimited-${sz}MB --rate 1gbit --rtt 60ms --streams 100 --size ${sz}MB \
                --autotune off --window 16MiB --conn-window 1600MiB
        done
        plot "$out/e3.png" "100 streams, 64 MiB budget, 1 Gbit/s, 60 ms" \
            "$out/e3-100streams-2500MB.csv $out/e3-unlimited-2500MB.csv" "100-streams unlimited-windows"
        ;;
    4) # A reader draining 10 Mbit/s from a 1 Gbit/s, 60 ms path.
        run e4-slowreader --rate 1gbit --rtt 60ms --duration 20s --read-rate 10mbit --window 64KiB \
            --conn-window 256KiB
        plot "$out/e4.png" "slow reader (10 Mbit/s) on 1 Gbit/s, 60 ms" "$out/e4-slowreader.csv" "slow-reader"
        ;;
    5) # 30 streams under the 64 MiB budget on a long path, 1 Gbit/s, 150 ms
        # (BDP 18.75 MB): the budget must bound memory, not the link's use.
        run e5-30streams --rate 1gbit --rtt 150ms --streams 30 --size 1000MB \
            --window 64KiB --conn-window 256KiB --budget 64MiB
        run e5-unlimited --rate 1gbit --rtt 150ms --streams 30 --size 1000MB \
            --autotune off --window 16MiB --conn-window 1600MiB
        plot "$out/e5.png" "30 streams, 64 MiB budget, 1 Gbit/s, 150 ms" \
            "$out/e5-30streams.csv $out/e5-unlimited.csv" "30-streams unlimited-windows"
        ;;
    esac
done
