#!/usr/bin/env bash
# ONNX Runtime vs Minnow, side by side (issue 4). Installs what it needs (bench/install-deps.sh,
# onnxruntime-node from npm into the cache), exports the models (bench/export_models.py),
# imports them to .minnow, then bench/compare.js times both engines alternately and prints
# the table that BENCHMARKS.md holds.
#   bench/compare.sh [BUILD]          (default build/)
# Environment: MINNOW_BENCH_CACHE (default ~/.cache/minnow-bench), THREADS (1,2),
#   ROUNDS (5), SECONDS_PER_ROUND (1), WARMUP (3), ONLY (model names, comma-separated),
#   MARKDOWN (write the table there too), SKIP_DEPS=1 (do not run bench/install-deps.sh),
#   SKIP_BUILD=1 (use the minnow already built in BUILD), PIN (on: both engines' processes
#   bound to the same CPUs with taskset, the default; off: wherever the OS puts them).
# Each row's line on stderr also gives a CPU probe (bench/cpu_probe.c, built here with cc)
# of its CPUs before and after the row, marked where the host slowed one.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd || echo "${1:-$ROOT/build}")"
CACHE="${MINNOW_BENCH_CACHE:-$HOME/.cache/minnow-bench}"
ORT_VERSION=1.30.0
ORT_DIR="$CACHE/ort-$ORT_VERSION"
MODELS="$CACHE/models"
die() { echo "compare: error: $*" >&2; exit 1; }

[ "${SKIP_DEPS:-0}" = 1 ] || "$ROOT/bench/install-deps.sh"
command -v node >/dev/null || die "node not found (Node.js 18+ is needed for onnxruntime-node)"
command -v npm >/dev/null || die "npm not found"

# 1. ONNX Runtime from npm. --ignore-scripts: the package ships libonnxruntime for linux x64
#    in the tarball; its install script would only try to download GPU providers.
if [ ! -f "$ORT_DIR/node_modules/onnxruntime-node/package.json" ]; then
  mkdir -p "$ORT_DIR"
  [ -f "$ORT_DIR/package.json" ] || echo '{"name": "minnow-bench-ort", "private": true}' > "$ORT_DIR/package.json"
  echo "compare: installing onnxruntime-node@$ORT_VERSION into $ORT_DIR" >&2
  if ! (cd "$ORT_DIR" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
          "onnxruntime-node@$ORT_VERSION" >"$ORT_DIR/npm.log" 2>&1); then
    if ! timeout 20 npm ping >/dev/null 2>&1; then
      die "npm cannot reach its registry (no network?): onnxruntime-node@$ORT_VERSION not installed; log: $ORT_DIR/npm.log"
    fi
    die "npm install onnxruntime-node@$ORT_VERSION failed; log: $ORT_DIR/npm.log"
  fi
fi
node -e "require('$ORT_DIR/node_modules/onnxruntime-node')" 2>/dev/null ||
  die "onnxruntime-node in $ORT_DIR does not load (delete the folder to reinstall)"

# 2. Minnow: the command and the plugins the models need.
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$BUILD" --target minnow_cli cpu_dense frontend_onnx ops_lstm >/dev/null ||
    die "building minnow in $BUILD failed (run: cmake --build $BUILD)"
fi
MINNOW="$BUILD/bin/minnow"
[ -x "$MINNOW" ] || die "$MINNOW not found (build first, or leave SKIP_BUILD unset)"

# 3. Models: ONNX exports, and their .minnow imports (Minnow is timed on its own format,
#    so its load time is the mmap + verify a deployed app pays, not the ONNX import).
/usr/bin/python3 "$ROOT/bench/export_models.py" "$MODELS" >&2
for onnx in "$MODELS"/*.onnx; do
  mnw="${onnx%.onnx}.minnow"
  if [ ! -f "$mnw" ] || [ "$onnx" -nt "$mnw" ] || [ "$MINNOW" -nt "$mnw" ]; then
    "$MINNOW" import "$onnx" -o "$mnw" >/dev/null || die "minnow import $onnx failed"
  fi
done

# 4. The CPU probe (bench/cpu_probe.c): each row's CPUs timed on a fixed loop before and
#    after the row, so a row the host slowed is seen as such. Optional: without a C
#    compiler the table comes without it.
PROBE="$CACHE/cpu_probe"
if [ ! -x "$PROBE" ] || [ "$ROOT/bench/cpu_probe.c" -nt "$PROBE" ]; then
  if command -v cc >/dev/null && cc -O2 -o "$PROBE.tmp" "$ROOT/bench/cpu_probe.c" 2>/dev/null; then
    mv "$PROBE.tmp" "$PROBE"
  else
    rm -f "$PROBE.tmp" "$PROBE"
    echo "compare: no C compiler to build bench/cpu_probe.c: rows without the CPU probe" >&2
  fi
fi

# 5. The table.
echo "compare: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
args=(--minnow "$MINNOW" --ort "$ORT_DIR" --models "$MODELS" --threads "${THREADS:-1,2}"
      --rounds "${ROUNDS:-5}" --seconds "${SECONDS_PER_ROUND:-1}" --warmup "${WARMUP:-3}")
[ -n "${ONLY:-}" ] && args+=(--only "$ONLY")
[ -n "${MARKDOWN:-}" ] && args+=(--markdown "$MARKDOWN")
args+=(--pin "${PIN:-on}")
[ -x "$PROBE" ] && args+=(--probe "$PROBE")
exec node "$ROOT/bench/compare.js" "${args[@]}"
