#!/usr/bin/env bash
# Idempotent setup on Debian 12: the packages pfcswitch builds and tests with
# (scripts/setup.sh --bench: and what scripts/bench.sh's references need).
# Hugepages are optional and never required (the configs run with --no-huge).
set -euo pipefail

PKGS=(libdpdk-dev dpdk dpdk-dev pkg-config clang libclang-dev build-essential
      tshark iproute2 iputils-ping python3-scapy python3-matplotlib libpcap-dev valgrind
      pyflakes3 shellcheck ethtool frr iperf3 lldpad
      dpkg-dev help2man lintian systemd)   # scripts/deb.sh: dpkg-shlibdeps, man pages; tests/deb_package.rs: lintian, systemd-analyze

# --bench: also what scripts/bench.sh's references need (dpdk-doc: DPDK's examples' source,
# l3fwd built from it). Not needed by the build or the tests.
if [ "${1:-}" = "--bench" ]; then
    PKGS+=(dpdk-doc)
fi

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # tshark asks whether non-root users may capture; answer no without a prompt.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: cargo not found; install Rust (rustup) first" >&2
        exit 1
    fi
fi

pkg-config --atleast-version=22.11 libdpdk || { echo "setup: libdpdk >= 22.11 not found" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "setup: dpdk-testpmd missing (package dpdk)" >&2; exit 1; }
echo "setup: ok (DPDK $(pkg-config --modversion libdpdk), $(cargo --version))"
