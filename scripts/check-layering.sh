#!/usr/bin/env bash
# The library's boundary (DESIGN.md "As the tree grows", issue 16): tools in
# apps/, bench/ and examples/ use only include/quack/ (and the simulator's
# documented headers under src/sim/); no function in src/ is longer than 80
# lines. Prints each violation; exits 1 if there is any.
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
long=$(python3 scripts/long-functions.py 80 $(git ls-files 'src/*.c' 2>/dev/null || find src -name '*.c'))
if [ -n "$long" ]; then
  echo "check-layering: functions over 80 lines in src/ (lines file:line name):"
  echo "$long"
  rc=1
fi
[ $rc -eq 0 ] && echo "check-layering: ok (tools use the public API; no function in src/ over 80 lines)"
exit $rc
