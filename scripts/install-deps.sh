#!/usr/bin/env bash
# Installs every Debian package Basalt needs to build, test and run. Idempotent: when everything
# is present it prints nothing and exits 0. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang-14 clang-format libclang-rt-14-dev
  protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev libgrpc-dev
  libabsl-dev librocksdb-dev
  libgoogle-glog-dev libgflags-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  libsnappy-dev liblz4-dev libzstd-dev zlib1g-dev libxxhash-dev
  libcpp-httplib-dev libssl-dev libbrotli-dev libgoogle-perftools-dev libedit-dev
  python3 python3-yaml python3-dev pybind11-dev python3-numpy python3-pytest
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
