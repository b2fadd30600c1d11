#!/usr/bin/env bash
# Builds bench/inproc_ab.cc in BUILD (default build/) with the plugins and runs it: two
# settings of the engine (environment variables read at prepare, session or run time)
# A/B'd in one process, runs alternated in short blocks. Arguments as inproc_ab's:
#   bench/inproc_ab.sh [BUILD] MODEL [--threads N] [--blocks B] [--runs R] "ENV_A" "ENV_B"
# e.g. an experiment's switch, read with getenv where the setting is decided:
#   bench/inproc_ab.sh build ~/.cache/minnow-bench/models/resnet50.minnow --threads 2 "" "MINNOW_X=1"
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
if [ $# -gt 0 ] && [ -d "$1" ] && [ -f "$1/build.ninja" ]; then BUILD="$1"; shift; fi
[ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target inproc_ab cpu_dense frontend_onnx -j2 >/dev/null
exec "$BUILD/bin/inproc_ab" "$@"
