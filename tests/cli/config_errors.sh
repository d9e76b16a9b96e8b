#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CLI commands explain a configuration qk_endpoint_new refuses (with
# qk_config_check's text), naming the option, and exit 2 like other bad
# option values.
# Usage: bash tests/cli/config_errors.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: config_errors.sh BUILD_DIR}
q="$build/quack"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # name want_rc want_stderr_substring cmd...
    local name=$1 want=$2 text=$3 rc=0
    shift 3
    timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -eq "$want" ] && grep -qF -- "$text" "$tmp/err"; then
        echo "ok   - $name"
    else
        echo "FAIL - $name: exit $rc (want $want), stderr: $(head -3 "$tmp/err")"
        fails=$((fails + 1))
    fi
}
V="version must be 0, 0x00000001 (QUIC v1) or 0x6b3343cf (QUIC v2)"
expect "get: unsupported --quic-version" 2 "quack get: --quic-version 0x1a2a3a4a: $V" \
    "$q" get --insecure --quic-version 0x1a2a3a4a https://127.0.0.1:9/x
# Only the explanation: no per-URL noise after a refused configuration.
if grep -q 'not completed' "$tmp/err"; then
    echo "FAIL - get: per-URL lines after a configuration error"
    fails=$((fails + 1))
fi
expect "serve: unsupported --quic-version" 2 "quack serve: --quic-version 7: $V" \
    "$q" serve --root "$tmp" --listen 127.0.0.1:0 --quic-version 7
expect "get: --quic-version junk" 2 "--quic-version v3: want v1, v2 or a number" \
    "$q" get --insecure --quic-version v3 https://127.0.0.1:9/x
expect "get: --offer-version 0" 2 "--offer-version 0: want v1, v2 or a nonzero number" \
    "$q" get --insecure --offer-version 0 https://127.0.0.1:9/x
expect "get: --key-update=0" 2 "--key-update=0: want --key-update or --key-update=N" \
    "$q" get --insecure --key-update=0 https://127.0.0.1:9/x
expect "serve: --key-update=x" 2 "--key-update=x: want --key-update or --key-update=N" \
    "$q" serve --root "$tmp" --listen 127.0.0.1:0 --key-update=x
expect "get: --max-data 0" 2 "--max-data 0: want a size > 0 (e.g. 1000, 64K, 4M)" \
    "$q" get --insecure --max-data 0 https://127.0.0.1:9/x
expect "get: --max-stream-data junk" 2 "--max-stream-data 4Q: want a size > 0" \
    "$q" get --insecure --max-stream-data 4Q https://127.0.0.1:9/x
expect "get: --max-data without a value" 2 "--max-data needs a value" \
    "$q" get --insecure https://127.0.0.1:9/x --max-data
[ "$fails" -eq 0 ]
