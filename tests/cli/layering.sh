#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: scripts/check-layering.sh scripts/gen-architecture.py scripts/long-functions.py scripts/check-cycles.py
# The library's boundary and its generated docs hold: tools use only the public
# headers (documented exceptions in check-layering.sh), no function in src/ or
# apps/ is over 80 lines, docs/architecture.md's module table is what
# scripts/gen-architecture.py writes from the tree, and every folder's README
# names its files and allows what they include (gen-architecture.py --check).
# The length check cannot pass by finding nothing: on tests/cli/fixtures/long_function.c it must flag
# exactly the two 90-line functions (one per brace layout) and none of the long
# initialisers. No include or call cycle crosses a folder boundary under src/
# (scripts/check-cycles.py on BUILD_DIR's object files); the check cannot pass
# by finding nothing: on tests/cli/fixtures/cycle/ (two folders calling each
# other) it must report exactly that cycle. Usage: layering.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: layering.sh BUILD_DIR}" && pwd)
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
fx=$(mktemp -d)
trap 'rm -rf "$fx"' EXIT
mkdir -p "$fx/src/a" "$fx/src/b" "$fx/build/CMakeFiles/x/src/a" "$fx/build/CMakeFiles/x/src/b"
cp tests/cli/fixtures/cycle/a/*.[ch] "$fx/src/a/"
cp tests/cli/fixtures/cycle/b/*.[ch] "$fx/src/b/"
mkdir -p "$fx/scripts" && cp scripts/check-cycles.py "$fx/scripts/"
for m in a/ping b/pong; do
  cc -c -I "$fx/src" -o "$fx/build/CMakeFiles/x/src/$m.c.o" "$fx/src/$m.c"
done
got=$(python3 "$fx/scripts/check-cycles.py" "$fx/build" | grep '^cycle' || true)
want="cycle over src/a/ping, src/b/pong:"
if [ "$got" != "$want" ]; then
  echo "layering: check-cycles.py on tests/cli/fixtures/cycle printed"
  echo "${got:-(no cycle)}"
  echo "instead of"
  echo "$want"
  rc=1
fi
python3 scripts/check-cycles.py "$build" || rc=1
./scripts/check-layering.sh || rc=1
python3 scripts/gen-architecture.py --check || rc=1
exit $rc
