#!/usr/bin/env bash
# The `make run` demo. Replaced step by step as capabilities land.
set -euo pipefail
build=${1:-build/release}
"$build/quack" version
