#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages quack needs to build, test and run its demos.
# Idempotent and quiet when everything is present. As non-root, prints the
# exact apt-get line and exits non-zero.
set -euo pipefail

PKGS=(
  # build
  build-essential cmake ninja-build pkg-config clang clang-format
  libclang-rt-14-dev
  # libraries
  libgnutls28-dev nettle-dev libssl-dev libev-dev libinih-dev libnghttp3-dev
  # tests
  libcmocka-dev python3 jq
  # tools, peers, plots
  gnuplot-nox ngtcp2-client ngtcp2-server tshark time openssl procps ca-certificates
  # install + packaging: man page, make deb, lintian, ldd/readelf checks; make docs
  doxygen help2man debhelper dpkg-dev fakeroot lintian man-db binutils
  # ABI check against abi/libquack.abi (tests/cli/abi.sh): abidw, abidiff
  abigail-tools
  # yamux interop peer (tests/interop/yamux), built offline
  golang-go golang-github-hashicorp-yamux-dev
  # DNS carrier rig (tests/interop/dns.sh, bench/dns.sh): resolvers, ss, ip netns; iodine baseline
  unbound dnsmasq iproute2 iodine
  # quack tunnel (tests/cli/tunnel_{socks5,udp}.sh, bench/tunnel.sh): curl, dig, kcptun baseline
  curl dnsutils kcptun
  # a real browser over HTTP/3 (tests/interop/chromium.sh): headless Chromium
  chromium
  # fleet behind an L4 balancer (tests/cli/fleet.sh, bench/fleet.sh): nginx's UDP stream module;
  # kernel steering of --threads workers (SO_ATTACH_REUSEPORT_EBPF): libbpf
  nginx libnginx-mod-stream libbpf-dev
  # load beside the suite when proving it green on a busy machine (README's test row)
  stress-ng
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
  echo "deps.sh: run as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no, non-interactively.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
