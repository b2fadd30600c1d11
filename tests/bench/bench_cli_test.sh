#!/usr/bin/env bash
# `minnow bench` behaviour (issue 4), on the small Fashion-MNIST mlp so it takes seconds:
# the JSON summary and its fields, --runs / --seconds / --warmup, --profile tables,
# --output-dir, and one clear error (non-zero exit) for each kind of bad use.
set -euo pipefail
MINNOW=$1
DATA=$2
MODEL="$DATA/fashion_mnist/mlp/mlp.onnx"
LSTM="$DATA/fashion_mnist/lstm/lstm.onnx"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Value of a numeric JSON field (the summary is one flat line; no jq on a bare machine).
field() { sed -n "s/.*\"$2\": *\([-0-9.eE+]*\).*/\1/p" <<<"$1"; }

# --json with --runs: every documented field, runs and threads as asked, min <= median <= max.
out=$("$MINNOW" bench "$MODEL" --runs 7 --warmup 2 --threads 2 --json)
for k in median_ms min_ms max_ms mean_ms runs threads load_ms prepare_ms session_ms arena_bytes weight_bytes \
         scratch_bytes io_bytes prepare_rss_bytes peak_bytes peak_rss_bytes; do
  [ -n "$(field "$out" $k)" ] || fail "--json lacks $k: $out"
done
[ "$(field "$out" runs)" = 7 ] || fail "--runs 7 gave runs=$(field "$out" runs)"
[ "$(field "$out" threads)" = 2 ] || fail "--threads 2 gave threads=$(field "$out" threads)"
awk -v a="$(field "$out" min_ms)" -v m="$(field "$out" median_ms)" -v b="$(field "$out" max_ms)" \
  'BEGIN { exit !(a > 0 && a <= m && m <= b) }' || fail "not 0 < min <= median <= max: $out"
# mlp weights are 784x300 + 300x100 + 100x10 floats (+ biases): weight_bytes must count them.
awk -v w="$(field "$out" weight_bytes)" -v p="$(field "$out" peak_bytes)" \
  'BEGIN { exit !(w >= 4 * (784 * 300 + 300 * 100 + 100 * 10) && p >= w) }' || fail "weight/peak bytes too small: $out"
[ "$(grep -c '"nodes"' <<<"$out")" = 0 ] || fail "nodes listed without --profile"

# --seconds: a time budget, at least one run, ends about when asked.
t0=$(date +%s%N)
out=$("$MINNOW" bench "$MODEL" --seconds 0.3 --warmup 0 --json)
t1=$(date +%s%N)
runs=$(field "$out" runs)
[ "$runs" -ge 1 ] || fail "--seconds gave runs=$runs"
[ $(( (t1 - t0) / 1000000 )) -lt 20000 ] || fail "--seconds 0.3 took $(( (t1 - t0) / 1000000 )) ms"

# Text output: the summary line and the setup / memory lines.
txt=$("$MINNOW" bench "$MODEL" --runs 3)
grep -q "median .* ms, min .* ms, max .* ms.* over 3 runs" <<<"$txt" || fail "summary line: $txt"
grep -q "^setup: load .* ms, prepare .* ms" <<<"$txt" || fail "setup line: $txt"
grep -q "^memory: arena .*weights .*peak" <<<"$txt" || fail "memory line: $txt"

# --profile: one row per node with op, output shape, backend, kernel, share; the op summary;
# the shares of the node table add up to ~100 %.
txt=$("$MINNOW" bench "$MODEL" --runs 5 --profile)
grep -qE "^node +op +output +backend +kernel +ms +share +GFLOP/s" <<<"$txt" || fail "profile header: $txt"
grep -qE " Gemm +\[1,300\] +cpu_dense " <<<"$txt" || fail "profile has no Gemm [1,300] row on cpu_dense: $txt"
share=$(awk '/^node /{on=1; next} on && NF==0 {on=0} on {gsub("%","",$(NF-1)); s+=$(NF-1)} END {print s}' <<<"$txt")
awk -v s="$share" 'BEGIN { exit !(s > 99 && s < 101) }' || fail "node shares sum to $share %"
grep -qE "^op +nodes +ms +share +GFLOP/s" <<<"$txt" || fail "per-op summary missing: $txt"
out=$("$MINNOW" bench "$MODEL" --runs 3 --profile --json)
grep -q '"nodes": \[{"name": ' <<<"$out" || fail "--profile --json lists no nodes: $out"

# --output-dir: the last run's outputs as .npy, identical to `minnow run` on the same input.
"$MINNOW" bench "$MODEL" --runs 2 -o "$TMP/bench" --json >/dev/null
"$MINNOW" run "$MODEL" --random -o "$TMP/run" >/dev/null
n=$(ls "$TMP/bench"/*.npy | wc -l)
[ "$n" = 1 ] || fail "--output-dir wrote $n files"
cmp -s "$TMP/bench"/*.npy "$TMP/run"/*.npy || fail "bench and run outputs differ on the same (seeded) input"

# An op plugin's model (LSTM) benches too.
"$MINNOW" bench "$LSTM" --runs 2 --json >/dev/null || fail "lstm model does not bench"

# Bad use: one "minnow: error" line or a CLI11 message, non-zero exit, never a crash.
expect_error() {
  local what=$1; shift
  set +e
  err=$("$MINNOW" "$@" 2>&1 >/dev/null)
  rc=$?
  set -e
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "$what: exit $rc"
  [ -n "$err" ] || fail "$what: no message"
}
expect_error "missing model" bench "$TMP/none.onnx" --runs 1
grep -q "none.onnx" <<<"$err" || fail "missing model: message does not name the file: $err"
expect_error "--runs with --seconds" bench "$MODEL" --runs 3 --seconds 1
expect_error "--runs 0" bench "$MODEL" --runs 0
expect_error "--threads 0" bench "$MODEL" --threads 0
expect_error "unknown backend" bench "$MODEL" --runs 1 --backend no_such_backend
printf 'not a model' >"$TMP/bad.minnow"
expect_error "corrupt model" bench "$TMP/bad.minnow" --runs 1
echo "bench CLI: all checks passed"
