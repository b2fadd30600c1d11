#!/usr/bin/env bash
# Stripped sizes of libminnow and of every plugin in a build (the table in BENCHMARKS.md).
#   bench/sizes.sh [BUILD]     (default build/; an optimised build gives the figures that count)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT
row() {
  strip --strip-all -o "$TMP" "$1"
  local s=$(stat -c %s "$TMP")
  awk -v n="$2" -v s="$s" 'BEGIN { printf "| %s | %d | %.1f |\n", n, s, s / 1024 }'
}
lib=$(readlink -f "$BUILD/lib/libminnow.so") || { echo "sizes: no $BUILD/lib/libminnow.so (build first)" >&2; exit 1; }
echo "| file | stripped bytes | KiB |"
echo "|---|---:|---:|"
row "$lib" "libminnow.so (core)"
for p in "$BUILD"/lib/minnow/plugins/*.so; do
  row "$p" "plugins/$(basename "$p")"
done
