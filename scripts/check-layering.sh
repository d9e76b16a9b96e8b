#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The library's boundary (docs/architecture.md): tools in
# apps/, bench/ and examples/ use only include/quack/ (and the simulator's
# documented headers under src/sim/); no function in src/ or apps/ is longer
# than 80 lines (scripts/long-functions.py; tests/cli/layering.sh checks that
# it finds long functions in either brace layout). Prints each violation;
# exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
# Documented exception: the simulator's headers (sim/flow_quic.h for benches,
# sim/relay.h for quack netem). The DNS carrier's API is include/quack/dns.h.
bad=$(grep -rn --include='*.c' --include='*.h' -E '#include "(transport|crypto|io|base|wire|h3|tunnel|dns|yamux)/' \
      apps bench examples 2>/dev/null || true)
if [ -n "$bad" ]; then
  echo "check-layering: internal headers included by tools (use include/quack/):"
  echo "$bad"
  rc=1
fi
files=$(git ls-files 'src/*.[ch]' 'apps/*.[ch]' 2>/dev/null || find src apps -name '*.[ch]')
if [ -z "$files" ]; then
  echo "check-layering: no C files found under src/ and apps/"
  exit 1
fi
long=$(python3 scripts/long-functions.py 80 $files)
if [ -n "$long" ]; then
  echo "check-layering: functions over 80 lines in src/ or apps/ (lines file:line name):"
  echo "$long"
  rc=1
fi
[ $rc -eq 0 ] && echo "check-layering: ok (tools use the public API; no function in src/ or apps/ over 80 lines)"
exit $rc
