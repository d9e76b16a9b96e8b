#!/usr/bin/env bash
# covers: scripts/check-layering.sh scripts/gen-architecture.py
# The library's boundary and its generated docs hold: tools use only the public
# headers (documented exceptions in check-layering.sh), no function in src/ is
# over 80 lines, and docs/architecture.md's module table is what
# scripts/gen-architecture.py writes from the tree. Usage: layering.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
rc=0
./scripts/check-layering.sh || rc=1
python3 scripts/gen-architecture.py --check || rc=1
exit $rc
