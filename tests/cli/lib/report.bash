# SPDX-License-Identifier: MIT
# The CLI tests' reporters (source it): "ok   - WHAT" and "FAIL - WHAT"
# lines, failures counted in $fails; check WHAT CONDITION evaluates the
# condition and reports it. no returns 1, so `cmd || no WHAT` also fails a
# function it ends.
fails=0
ok() { echo "ok   - $*"; }
no() {
    echo "FAIL - $*"
    fails=$((fails + 1))
    return 1
}
check() { if eval "$2"; then ok "$1"; else no "$1"; fi; }
