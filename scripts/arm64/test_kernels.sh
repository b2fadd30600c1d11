#!/usr/bin/env bash
# Cross-builds the cpu_sparse and cpu_dense kernel tests for aarch64 and runs each under
# qemu twice:
#   -cpu cortex-a72  (no SVE: Highway dispatches to NEON)
#   default CPU      (qemu's "max": SVE2, Highway dispatches to SVE2)
# qemu runs without -L: the arm64 multiarch loader/libraries live in /lib/aarch64-linux-gnu.
# Usage: scripts/arm64/test_kernels.sh [build-dir]
# Exits 77 (CTest: skipped) with a message when the cross tools are not installed
# (scripts/install-deps.sh installs them).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build/arm64-kernels}"

missing=()
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
[ -e /usr/lib/aarch64-linux-gnu/libhwy.so ] || missing+=(libhwy-dev:arm64)
[ -e /usr/include/doctest/doctest.h ] || missing+=(doctest-dev)
if [ ${#missing[@]} -ne 0 ]; then
  echo "SKIPPED: aarch64 kernel tests need: ${missing[*]} (run scripts/install-deps.sh)"
  exit 77
fi

cmake -S "$ROOT/scripts/arm64" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchains/aarch64-linux-gnu.cmake" >/dev/null
cmake --build "$BUILD" -j2
for name in cpu_sparse_kernels_test cpu_dense_kernels_test; do
  BIN="$BUILD/$name"
  if command -v file >/dev/null; then
    file "$BIN" | grep -q aarch64 || { echo "not an aarch64 binary: $BIN"; exit 1; }
  fi
  echo "== $name: qemu-aarch64 -cpu cortex-a72 (NEON)"
  out=$(qemu-aarch64 -cpu cortex-a72 "$BIN")
  echo "$out" | tail -4
  echo "$out" | grep -q "SIMD target NEON" || { echo "expected the NEON target"; exit 1; }
  echo "== $name: qemu-aarch64 default CPU (SVE2)"
  out=$(qemu-aarch64 "$BIN")
  echo "$out" | tail -4
  echo "$out" | grep -q "SIMD target SVE" || { echo "expected an SVE target"; exit 1; }
done
echo "aarch64 kernel tests passed (NEON and SVE)"
