#!/usr/bin/env bash
# Sparse vs dense benchmark (issue 6 targets): builds sparse_bench in BUILD (default
# build/) and runs it, 1 thread, median of RUNS runs, dense/sparse ratio measured in the
# same process. Prints per-layer tables (MobileNetV2 1x1 stack, a 3x3 conv, mlp / lstm FC
# layers) by block shape and sparsity, the fitted cost table for thresholds.cc, and whole
# models from tests/data (mlp, lstm, mobilenet) pruned to 90 %, and torchvision's
# mobilenet_v2 (MOBILENET_V2, default the bench/export_models.py cache) with its 1x1
# convolutions pruned to 90 % (skipped with a message when the file is absent).
#   bench/sparse.sh [BUILD] [extra sparse_bench args, e.g. --quick]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
shift || true
RUNS="${RUNS:-21}"
MOBILENET_V2="${MOBILENET_V2:-$HOME/.cache/minnow-bench/models/mobilenet_v2.onnx}"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" --target sparse_bench cpu_sparse cpu_dense frontend_onnx -j2 >/dev/null
MINNOW_PLUGIN_PATH="$BUILD/lib/minnow/plugins" \
  "$BUILD/bin/sparse_bench" --runs "$RUNS" --fit --model-dir "$ROOT/tests/data/fashion_mnist" \
  --mobilenet-v2 "$MOBILENET_V2" "$@"
