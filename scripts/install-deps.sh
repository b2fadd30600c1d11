#!/usr/bin/env bash
# Installs the Debian 12 packages Minnow needs, only those missing. Idempotent and quiet
# when everything is there. Run as root, or with sudo available.
set -euo pipefail

PACKAGES=(
  # toolchain
  cmake ninja-build g++ pkg-config ccache zlib1g-dev libstb-dev libpng-dev libjpeg62-turbo-dev
  # core and plugins
  libboost-dev libboost-filesystem-dev flatbuffers-compiler libflatbuffers-dev
  libspdlog-dev libtbb-dev libhwy-dev libcli11-dev nlohmann-json3-dev libeigen3-dev
  # ONNX frontend and its conformance data
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # tests
  doctest-dev
  # fuzzing (make fuzz, make test-asan): clang 14 and its libFuzzer / sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # compression end-to-end runs (60,000 training images for distill, .gz idx)
  dataset-fashion-mnist
  # aarch64 cross build + qemu for the sparse kernels' Arm tests (scripts/arm64/)
  g++-aarch64-linux-gnu qemu-user file libhwy-dev:arm64
)

# Package names given as arguments replace the default set (bench/install-deps.sh uses this
# for the benchmark's packages, which `make` and `make test` do not need).
[ $# -gt 0 ] && PACKAGES=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# arm64 multiarch packages (":arm64") need the architecture enabled once.
if printf '%s\n' "${missing[@]}" | grep -q ':arm64$' && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
