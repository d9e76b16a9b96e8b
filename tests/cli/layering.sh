#!/usr/bin/env bash
# covers: scripts/check-layering.sh scripts/gen-architecture.py scripts/long-functions.py
# The library's boundary and its generated docs hold: tools use only the public
# headers (documented exceptions in check-layering.sh), no function in src/ or
# apps/ is over 80 lines, and docs/architecture.md's module table is what
# scripts/gen-architecture.py writes from the tree. The length check cannot
# pass by finding nothing: on tests/cli/fixtures/long_function.c it must flag
# exactly the two 90-line functions (one per brace layout) and none of the long
# initialisers. Usage: layering.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
rc=0
got=$(python3 scripts/long-functions.py 80 tests/cli/fixtures/long_function.c | awk '{print $1, $3}')
want=$'90 brace_at_end\n90 brace_in_column_0'
if [ "$got" != "$want" ]; then
  echo "layering: long-functions.py on tests/cli/fixtures/long_function.c printed"
  echo "${got:-(nothing)}"
  echo "instead of"
  echo "$want"
  rc=1
fi
./scripts/check-layering.sh || rc=1
python3 scripts/gen-architecture.py --check || rc=1
exit $rc
