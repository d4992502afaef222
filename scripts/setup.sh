#!/usr/bin/env bash
# Installs every Debian package Tessera needs to build, test and benchmark.
# Idempotent; run as root (or with sudo available) on Debian 12 (bookworm).
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config git
  libzmq3-dev cppzmq-dev libsodium-dev
  capnproto libcapnp-dev
  llvm-16-dev libclang-16-dev clang-16
  libclang-rt-16-dev                     # libFuzzer and the sanitizer runtimes for clang (scripts/fuzz.sh)
  llvm-16-tools
  libtbb-dev
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  zlib1g-dev
  ccache                                 # fast rebuilds (scripts/test.sh, sanitize.sh, fuzz.sh); CI is timed without a warm cache
  python3 python3-matplotlib
  iproute2 openssh-client procps
)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup.sh: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
