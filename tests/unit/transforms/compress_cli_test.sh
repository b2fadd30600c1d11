#!/usr/bin/env bash
# `minnow compress` end to end on a small model (lenet5, quick pipeline, no data):
# ratio > 1, input untouched, output written whole (no temporary left, an existing file
# replaced only on success), the compression log shown by `minnow inspect`, and a bad
# pipeline refused with a clear error, a non-zero exit and no output file.
set -euo pipefail
MINNOW=$1
MODEL=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cp "$MODEL" "$WORK/in.onnx"
sum_before=$(sha256sum "$WORK/in.onnx" | cut -d' ' -f1)
mkdir "$WORK/out"

# 1. A quick pipeline (no training data); JSON summary with ratio > 1.
json=$("$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/c.minnow" \
       --pipeline "fuse,prune:sparsity=0.6:scope=layer,quantize:bits=4,huffman" --json)
echo "$json" | head -c 300; echo
ratio=$(echo "$json" | sed -n 's/^{"bytes_before":[0-9]*,"bytes_after":[0-9]*,"ratio":\([0-9.]*\).*/\1/p')
[ -n "$ratio" ] || fail "no ratio in the JSON summary"
awk -v r="$ratio" 'BEGIN { exit !(r > 1.5) }' || fail "ratio $ratio is not above 1.5"
before=$(echo "$json" | sed -n 's/^{"bytes_before":\([0-9]*\),.*/\1/p')
after=$(echo "$json" | sed -n 's/^{"bytes_before":[0-9]*,"bytes_after":\([0-9]*\),.*/\1/p')
[ "$(stat -c %s "$WORK/out/c.minnow")" = "$after" ] || fail "file size differs from bytes_after $after"
[ "$before" -gt "$after" ] || fail "bytes_before $before not above bytes_after $after"
# lenet5's FLOPs per image by hand: conv1 2*6*28*28*25 + conv2 2*16*10*10*150 + fc 2*(400*120+120*84+84*10);
# unstructured pruning leaves them as they are.
echo "$json" | grep -q '"flops_before":833040,"flops_after":833040,' || fail "FLOPs missing or wrong in the JSON summary"

# 2. Input untouched; only the output in its folder (no temporary file left behind).
[ "$(sha256sum "$WORK/in.onnx" | cut -d' ' -f1)" = "$sum_before" ] || fail "input modified"
[ "$(ls -A "$WORK/out")" = "c.minnow" ] || fail "unexpected files in the output folder: $(ls -A "$WORK/out")"

# 3. The compression log, one record per step, in `minnow inspect`.
log=$("$MINNOW" inspect "$WORK/out/c.minnow")
for step in fuse prune quantize huffman; do
  echo "$log" | grep -q "^compression: $step " || fail "inspect shows no '$step' record"
done
# The compressed model still runs: the same class for test image 0 as the original.
ref=$("$MINNOW" run "$WORK/in.onnx" --input "$3" --top-k 1 2>/dev/null | grep -o 'argmax [0-9]*' | head -1 || true)
got=$("$MINNOW" run "$WORK/out/c.minnow" --input "$3" --top-k 1 2>/dev/null | grep -o 'argmax [0-9]*' | head -1 || true)
[ -n "$ref" ] && [ "$ref" = "$got" ] || fail "top-1 of test image 0: original '$ref', compressed '$got'"

# 3b. --sparse-format reaches the prune step: its log record names the block shape of
#     every pruned weight, and a shape the kernels do not run is refused by the CLI.
"$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/b.minnow" --pipeline "fuse,prune:sparsity=0.8" \
  --sparse-format 4x1 >/dev/null || fail "--sparse-format 4x1 failed"
"$MINNOW" inspect "$WORK/out/b.minnow" | grep "^compression: prune " | grep -q '"block":"4x1"' ||
  fail "prune's log record does not show block 4x1"
if "$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/bad.minnow" --pipeline "prune:sparsity=0.8" \
  --sparse-format 3x3 2>/dev/null; then
  fail "--sparse-format 3x3 accepted"
fi
rm -f "$WORK/out/b.minnow"

# 4. A bad pipeline: clear error naming the step, non-zero exit, no output written, and an
#    existing output file left as it was.
for bad in "fuse,nosuchstep" "prune:sparsity=2" "quantize:bits=1"; do
  set +e
  err=$("$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/bad.minnow" --pipeline "$bad" 2>&1 >/dev/null)
  rc=$?
  set -e
  echo "pipeline '$bad' -> rc $rc: $err"
  [ $rc -ne 0 ] || fail "pipeline '$bad' exited 0"
  [ -n "$err" ] || fail "pipeline '$bad' printed no error"
  [ ! -e "$WORK/out/bad.minnow" ] || fail "pipeline '$bad' left an output file"
done
# A data file that does not exist is refused naming it, even where no step would read it.
set +e
err=$("$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/bad.minnow" --preset fast --calib "$WORK/no-such.idx" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a missing --calib file was accepted"
echo "$err" | grep -q "no-such.idx" || fail "the error for a missing --calib file does not name it: $err"
[ ! -e "$WORK/out/bad.minnow" ] || fail "a missing --calib file left an output file"
echo "junk" > "$WORK/out/keep.minnow"
if "$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/keep.minnow" --pipeline "prune:sparsity=2" 2>/dev/null; then
  fail "bad pipeline accepted"
fi
[ "$(cat "$WORK/out/keep.minnow")" = "junk" ] || fail "a failed run changed an existing output file"
[ "$(ls -A "$WORK/out" | sort | tr '\n' ' ')" = "c.minnow keep.minnow " ] || fail "temporary files left: $(ls -A "$WORK/out")"
# 5. --calib: prune-channels' calibration images, idx (made here: 40 random 28x28 images)
#    or raw float32 with --shape; the step's log records how many it used. Without
#    --calib or --train-images the step is refused, and a raw file that does not divide
#    into the shape is refused naming it, with no output written.
{ printf '\x00\x00\x08\x03\x00\x00\x00\x28\x00\x00\x00\x1c\x00\x00\x00\x1c'; head -c $((40 * 784)) /dev/urandom; } > "$WORK/calib.idx"
perl -e 'srand(7); print pack("f<*", map { rand() * 2 - 1 } 1 .. 24 * 784)' > "$WORK/calib.f32"
"$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/pc.minnow" --pipeline "fuse,prune-channels:ratio=0.5" \
  --calib "$WORK/calib.idx" >/dev/null || fail "--calib with idx images failed"
"$MINNOW" inspect "$WORK/out/pc.minnow" | grep -q '^compression: prune-channels .*"calib":40,' || fail "prune-channels did not use the 40 --calib images"
"$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/pc.minnow" --pipeline "fuse,prune-channels:ratio=0.5" \
  --calib "$WORK/calib.f32" --shape 24x1x28x28 >/dev/null || fail "--calib with raw float32 and --shape failed"
"$MINNOW" inspect "$WORK/out/pc.minnow" | grep -q '^compression: prune-channels .*"calib":24,' || fail "prune-channels did not use the 24 raw --calib images"
rm -f "$WORK/out/pc.minnow"
set +e
err=$("$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/pc.minnow" --pipeline "prune-channels:ratio=0.5" 2>&1 >/dev/null); rc=$?
set -e
[ $rc -ne 0 ] && echo "$err" | grep -q -- "--calib" || fail "prune-channels without calibration images: rc $rc, '$err'"
set +e
err=$("$MINNOW" compress "$WORK/in.onnx" -o "$WORK/out/pc.minnow" --pipeline "prune-channels:ratio=0.5" \
      --calib "$WORK/calib.f32" --shape 1x1x28x29 2>&1 >/dev/null); rc=$?
set -e
echo "raw calib of the wrong shape -> rc $rc: $err"
[ $rc -ne 0 ] && echo "$err" | grep -q "calib.f32" || fail "a raw file of the wrong size was not refused naming it"
[ ! -e "$WORK/out/pc.minnow" ] || fail "a refused run left an output file"
echo "compress CLI: ok (ratio $ratio)"
