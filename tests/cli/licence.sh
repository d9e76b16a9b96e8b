#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: scripts/spdx.sh LICENSE debian/copyright
# The MIT licence is in place: LICENSE is the MIT text, debian/copyright says
# Expat (DEP-5's name for it), and every tracked source file carries
# "SPDX-License-Identifier: MIT" (scripts/spdx.sh --check lists any that do
# not). Usage: tests/cli/licence.sh BUILD_DIR (unused)
set -u
cd "$(dirname "$0")/../.."
. tests/cli/lib/report.bash # ok, no, check, fails
check "LICENSE is the MIT licence" "grep -q '^MIT License' LICENSE && grep -q 'WITHOUT WARRANTY OF ANY KIND' LICENSE"
check "debian/copyright (DEP-5) names Expat for every file" "grep -q '^License: Expat' debian/copyright"
missing=$(bash scripts/spdx.sh --check 2>/dev/null)
n=$(printf '%s' "$missing" | grep -c .)
check "every source file carries SPDX-License-Identifier: MIT ($n without: $(echo $missing | head -c 300))" "[ $n -eq 0 ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
