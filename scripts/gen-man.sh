#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes the quack(1) man page from the CLI's own help texts: help2man turns
# `quack --help` into NAME/SYNOPSIS/DESCRIPTION, and each `quack COMMAND
# --help` becomes a subsection of COMMANDS, so the page cannot drift from
# the binary. Usage: gen-man.sh QUACK_BINARY VERSION OUT.1
set -euo pipefail
bin=$1 version=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# roff-escape a help text: backslashes, lines starting with . or ', and the
# one non-ASCII character the help texts use (help2man would mangle UTF-8).
roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" -e 's/§/\\(sc/g'; }

{
  echo '[COMMANDS]'
  # The command list is the part of `quack --help` indented under "commands:".
  for cmd in $("$bin" --help | sed -n '/^commands:/,/^$/p' | awk 'NF>1 {print $1}'); do
    echo ".SS \"quack $cmd\""
    echo '.nf'
    "$bin" "$cmd" --help 2>&1 | roff || true
    echo '.fi'
  done
  cat <<'H2M'
[ENVIRONMENT]
.TP
.B SSLKEYLOGFILE
When set, TLS secrets are appended to this file in NSS key log format (for
Wireshark).
[SEE ALSO]
The documentation in /usr/share/doc/quack and the project's docs/ directory:
docs/cli.md (commands), docs/sim.md (scenario files), docs/tunnel.md.
H2M
} >"$tmp/extra.h2m"

# help2man takes the SYNOPSIS from a line starting "Usage:" (case-sensitive):
# run the binary through a wrapper, named quack, that capitalises it.
mkdir "$tmp/bin"
printf '#!/bin/sh\n"%s" "$@" | sed "1s/^usage:/Usage:/"\n' "$(realpath "$bin")" >"$tmp/bin/quack"
chmod +x "$tmp/bin/quack"
help2man --no-info --no-discard-stderr --version-string="$version" \
  --name="QUIC transport stack: perf, tunnel, HTTP/3, simulator and netem tool" \
  --include="$tmp/extra.h2m" --output="$tmp/quack.1" "$tmp/bin/quack"
mv "$tmp/quack.1" "$out"
